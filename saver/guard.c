// SPDX-License-Identifier: MIT
#include "guard.h"

pid_t guard_pid(void)
{
	return 0;
}

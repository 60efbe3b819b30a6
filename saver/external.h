/* SPDX-License-Identifier: MIT */
#ifndef IBCR_SAVER_EXTERNAL_H
#define IBCR_SAVER_EXTERNAL_H

/* saver --external-fd: descriptors leading outside the image (external.c). */
#include "saver.h"

/* What every refusal of a descriptor leading outside adds: the option. */
#define EXTERNAL_HINT "; saver --external-fd %d:close|null|inherit|tty says what the " \
		      "restore puts there"

/* "[PID:]FD:ACTION" into o's rules; -1 when it is not of that form. */
int external_parse(const char *arg, struct fobjs *o);
/* The rule for pid's fd, or NULL. */
const struct ext_rule *external_find(const struct fobjs *o, pid_t pid, int fd);
/* Makes ob (and its data) the object that rule r says. */
void external_object(const struct ext_rule *r, int fd, struct ibcr_fobj *ob, uint8_t **data);
const char *external_action_name(uint32_t action);
/* An epoll watching a descriptor that a rule closes or nulls: refused. */
int external_check_epolls(const struct target *t, uint32_t n, const struct fobjs *o,
			  struct ibcr_err *e);

#endif

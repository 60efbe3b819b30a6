/* SPDX-License-Identifier: MIT */
/*
 * Forced first into every object of the restore core (-include): all
 * symbols, declared or defined, are hidden, so the compiler reaches them
 * PC-relative and never through a GOT, whose absolute addresses would be
 * wrong wherever the blob lands.
 */
#pragma GCC visibility push(hidden)

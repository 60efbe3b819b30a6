/* SPDX-License-Identifier: MIT */
#ifndef IBCR_CRC32C_H
#define IBCR_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/*
 * CRC-32C (Castagnoli), the checksum of every section and region of an
 * image. Chosen over zlib's CRC-32 because both architectures compute it
 * in hardware (x86 SSE4.2 crc32, aarch64 crc32c*), which keeps checking
 * far above disk speed. Freestanding: usable by the restore core.
 *
 * crc32c(0, buf, len) is the CRC of buf; pass the previous result as
 * `crc` to continue over more data.
 */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

#endif

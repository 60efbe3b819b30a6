// SPDX-License-Identifier: MIT
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "compress.h"
#include "image.h"

size_t blk_bound(int codec, size_t n)
{
	if (codec == IBCR_CODEC_ZSTD)
		return ZSTD_compressBound(n);
	if (codec == IBCR_CODEC_ZLIB)
		return compressBound((uLong)n);
	return n;
}

size_t blk_compress(int codec, int level, const void *src, size_t n, void *dst,
		    size_t cap)
{
	size_t out = 0;

	if (codec == IBCR_CODEC_ZSTD) {
		out = ZSTD_compress(dst, cap, src, n, level);
		if (ZSTD_isError(out))
			out = 0;
	} else if (codec == IBCR_CODEC_ZLIB) {
		uLongf len = (uLongf)cap;

		if (compress2(dst, &len, src, (uLong)n, level) == Z_OK)
			out = len;
	}
	return out && out < n ? out : 0;
}

int blk_decompress(int codec, const void *src, size_t n, void *dst, size_t raw)
{
	if (codec == IBCR_CODEC_RAW) {
		if (n != raw)
			return -1;
		memcpy(dst, src, n);
		return 0;
	}
	if (codec == IBCR_CODEC_ZSTD) {
		size_t got = ZSTD_decompress(dst, raw, src, n);

		return ZSTD_isError(got) || got != raw ? -1 : 0;
	}
	if (codec == IBCR_CODEC_ZLIB) {
		uLongf len = (uLongf)raw;

		return uncompress(dst, &len, src, (uLong)n) != Z_OK || len != raw ? -1 : 0;
	}
	return -1;
}

const char *codec_name(int codec)
{
	switch (codec) {
	case IBCR_CODEC_RAW: return "raw";
	case IBCR_CODEC_ZSTD: return "zstd";
	case IBCR_CODEC_ZLIB: return "zlib";
	}
	return "unknown";
}

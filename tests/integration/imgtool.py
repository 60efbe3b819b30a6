#!/usr/bin/python3
"""Reads and damages ibcr images for the integration tests.

The layouts are those of lib/image.h (all little-endian):

  imgtool.py sections IMAGE          one line per section:
                                     INDEX TYPE PROC OFFSET PAYLOAD SIZE
  imgtool.py flip IMAGE TYPE         flips one byte in the middle of the
                                     payload of the first TYPE section
  imgtool.py flip-region IMAGE       flips one byte in the page data of the
                                     region with the most data; prints that
                                     region as START-END (0x..., as the
                                     loader names regions)
  imgtool.py set-header IMAGE FIELD VALUE
                                     sets a u32 header field (version, arch,
                                     page_size, flags, nprocs) and recomputes
                                     the header CRC-32C, so only the field's
                                     meaning can make a reader refuse it
  imgtool.py xstate IMAGE COMM       the XSAVE header of thread COMM:
                                     sw-bytes and xstate_bv of its FP area
  imgtool.py syscall IMAGE COMM      the system call thread COMM was in, or
                                     had just returned from, when stopped
                                     (x86_64: orig_rax; aarch64: x8, which
                                     may be stale), -1 for none
"""
import struct
import sys

FILE_HDR = struct.Struct("<8sIIIIII Q 20s I")  # 64 bytes, crc over 60
SEC_HDR = struct.Struct("<IIII Q II 24s I I")  # 64 bytes, hdr_crc over 60
SEC_MAGIC = 0x43455349
TYPES = {1: "PROC", 2: "THREAD", 3: "SIGACT", 4: "FILES", 5: "PAGES",
         6: "VMAS", 7: "OPAQUE", 8: "FILEOBJS", 0x7fff: "END"}
HDR_FIELDS = ["version", "arch", "page_size", "flags", "nprocs", "hdr_size"]
# struct ibcr_thread up to the sizes, see lib/image.h
THREAD = struct.Struct("<iIQQIIQIIQQQQqq16s16sIIII")
# struct ibcr_vma
VMA = struct.Struct("<QQQIIIIII QQQQ QQQQ")


def crc32c(data, crc=0):
    """CRC-32C (Castagnoli, reflected polynomial 0x82f63b78)."""
    crc ^= 0xffffffff
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82f63b78 if crc & 1 else 0)
    return crc ^ 0xffffffff


def sections(img):
    """(index, type, proc, offset, payload offset, size) of every section."""
    out = []
    off = FILE_HDR.size
    while True:
        off = (off + 7) & ~7
        magic, typ, proc, _flags, size, pad = SEC_HDR.unpack_from(img, off)[:6]
        if magic != SEC_MAGIC:
            sys.exit(f"imgtool: no section header at offset {off}")
        payload = off + SEC_HDR.size + pad
        out.append((len(out), typ, proc, off, payload, size))
        if typ == 0x7fff:
            return out
        off = payload + size


def thread_rec(img, payload, size):
    """struct ibcr_thread at payload, checked against the section size."""
    t = THREAD.unpack_from(img, payload)
    want = THREAD.size + t[17] + t[18] + 128 * (t[19] + t[20])
    if want != size:
        sys.exit("imgtool: THREAD section does not match its layout here: "
                 "update imgtool.py to lib/image.h")
    return t


def first(img, name):
    for s in sections(img):
        if TYPES.get(s[1]) == name:
            return s
    sys.exit(f"imgtool: no {name} section")


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    with open(path, "rb") as f:
        img = bytearray(f.read())
    if cmd == "sections":
        for i, typ, proc, off, payload, size in sections(img):
            print(i, TYPES.get(typ, typ), proc, off, payload, size)
        return
    if cmd == "flip":
        _, _, _, _, payload, size = first(img, sys.argv[3])
        img[payload + size // 2] ^= 0xff
    elif cmd == "flip-region":
        pages = first(img, "PAGES")[4]
        vmas = first(img, "VMAS")[4]
        nvmas, strtab, nruns = struct.unpack_from("<IIQ", img, vmas)
        if 16 + nvmas * VMA.size + nruns * 16 + strtab != first(img, "VMAS")[5]:
            sys.exit("imgtool: VMAS section does not match its layout here: "
                     "update imgtool.py to lib/image.h")
        best = None
        for k in range(nvmas):
            v = VMA.unpack_from(img, vmas + 16 + k * VMA.size)
            start, end, data_off, data_len = v[0], v[1], v[11], v[12]
            if best is None or data_len > best[3]:
                best = (start, end, data_off, data_len)
        start, end, data_off, data_len = best
        img[pages + data_off + data_len // 2] ^= 0xff
        print(f"{start:#x}-{end:#x}")
    elif cmd == "set-header":
        field, value = sys.argv[3], int(sys.argv[4], 0)
        h = list(FILE_HDR.unpack_from(img, 0))
        h[1 + HDR_FIELDS.index(field)] = value
        FILE_HDR.pack_into(img, 0, *h)
        struct.pack_into("<I", img, 60, crc32c(img[:60]))
    elif cmd == "syscall":
        arch = FILE_HDR.unpack_from(img, 0)[2]
        for _, typ, _, _, payload, size in sections(img):
            if TYPES.get(typ) != "THREAD":
                continue
            t = thread_rec(img, payload, size)
            if t[16].rstrip(b"\0").decode() != sys.argv[3]:
                continue
            gp = payload + THREAD.size
            if t[13] >= 0:      # rewound to re-execute: the saver knew it
                nr = t[13]
            elif arch == 1:     # user_regs_struct: orig_rax is word 15
                nr = struct.unpack_from("<q", img, gp + 15 * 8)[0]
            else:               # user_pt_regs: x8 holds the number
                nr = struct.unpack_from("<q", img, gp + 8 * 8)[0]
            print(nr)
        return
    elif cmd == "xstate":
        for _, typ, _, _, payload, size in sections(img):
            if TYPES.get(typ) != "THREAD":
                continue
            t = thread_rec(img, payload, size)
            comm = t[16].rstrip(b"\0").decode()
            if comm != sys.argv[3]:
                continue
            fp = payload + THREAD.size + t[17]
            magic1, ext, xfeat, xsize = struct.unpack_from("<IIQI", img, fp + 464)
            bv, comp = struct.unpack_from("<QQ", img, fp + 512)
            print(f"fpregs_size {t[18]} magic1 {magic1:#x} extended_size {ext} "
                  f"xfeatures {xfeat:#x} xstate_size {xsize} xstate_bv {bv:#x} "
                  f"xcomp_bv {comp:#x}")
        return
    else:
        sys.exit(f"imgtool: unknown command {cmd}")
    with open(path, "wb") as f:
        f.write(img)


if __name__ == "__main__":
    main()

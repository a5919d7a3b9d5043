#!/usr/bin/env python3
"""prologue: the machine code that makes blocks with blockIdx.x < S exit,
taken from template.cu as nvcc compiled it, never assembled by hand.

Usage: prologue.py TEMPLATE.cubin SASS.txt OUT.txt
  SASS.txt: `cuobjdump -sass TEMPLATE.cubin` (each instruction's text and
  its 128-bit encoding as two 64-bit words, low word first).
Writes OUT.txt for suffix.cu: bytes=HEX (the prologue, padded with the
template's own NOPs to a multiple of 128 bytes), imm_bit=N (where the
32-bit compare constant starts, in bits from the prologue's first byte),
imm_delta=D (the constant is S + D: the compiler may compare with S - 1).
Fails, saying why, when the template compiled to anything but a read of
the block index, a compare and a predicated EXIT.
"""
import re
import struct
import sys

NAME = "prologue_template"
MARK = 0x5A5A5
# what may stand before the exit: reads of the block index, compares,
# register and predicate moves; nothing that touches memory or branches
ALLOWED = {"S2R", "S2UR", "CS2R", "ISETP", "UISETP", "R2UR", "MOV", "UMOV", "IMAD", "PLOP3", "UPLOP3", "NOP", "EXIT"}
# the stack pointer's set-up that every kernel starts with; the kernel's
# own code does it again, so the prologue leaves it out
R1_INIT = re.compile(r"^(MOV|LDC|IMAD\.MOV(\.U32)?) R1, (RZ, RZ, )?c\[0x0\]\[0x28\]$")

INST = re.compile(r"/\*([0-9a-f]{4,6})\*/\s+(.*?)\s*;\s*/\*\s*0x([0-9a-f]{16})\s*\*/")
WORD = re.compile(r"^\s*/\*\s*0x([0-9a-f]{16})\s*\*/\s*$")


def die(msg, listing=None):
    if listing:
        for off, text, _ in listing:
            print(f"  {off:04x}  {text}", file=sys.stderr)
    sys.exit(f"prologue.py: {msg}")


def sass(path):
    """[(offset, text, 16 bytes)] of NAME's instructions in cuobjdump's output."""
    insts, inside = [], False
    for line in open(path):
        if "Function :" in line:
            inside = line.split("Function :")[1].strip() == NAME
            continue
        if not inside:
            continue
        m = INST.search(line)
        if m:
            insts.append([int(m.group(1), 16), m.group(2).strip(), int(m.group(3), 16), None])
            continue
        m = WORD.match(line)
        if m and insts and insts[-1][3] is None:
            insts[-1][3] = int(m.group(1), 16)
    out = []
    for off, text, lo, hi in insts:
        if hi is None:
            die(f"no second encoding word for '{text}' at {off:#x}")
        out.append((off, text, struct.pack("<QQ", lo, hi)))
    if not out:
        die(f"no function {NAME} in {path}")
    return out


def text_section(path):
    """the bytes of .text.NAME in an ELF64 cubin, or None"""
    b = open(path, "rb").read()
    if b[:4] != b"\x7fELF" or b[4] != 2:
        return None
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
    stroff = secs[shstrndx][4]
    for s in secs:
        name = b[stroff + s[0]:b.index(b"\0", stroff + s[0])].decode()
        if name == ".text." + NAME:
            return b[s[4]:s[4] + s[5]]
    return None


def opcode(text):
    t = re.sub(r"^@!?U?P[T0-9]+\s+", "", text)
    return t.split()[0].split(".")[0], t


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    cubin, sasspath, outpath = sys.argv[1:]
    insts = sass(sasspath)
    text = text_section(cubin)
    if text is not None:
        for off, t, enc in insts:
            if text[off:off + 16] != enc:
                die(f"cuobjdump's encoding of '{t}' at {off:#x} differs from the cubin's .text.{NAME}")
    exit_at = next((i for i, (_, t, _) in enumerate(insts) if opcode(t)[0] == "EXIT"), None)
    if exit_at is None:
        die("the template has no EXIT", insts)
    seq = insts[:exit_at + 1]
    dropped = []
    if seq and R1_INIT.match(opcode(seq[0][1])[1]):
        dropped.append(seq[0][1])
        seq = seq[1:]
    for off, t, _ in seq:
        op, bare = opcode(t)
        if op not in ALLOWED:
            die(f"'{t}' before the first EXIT is not a block-index read, a compare or a move", insts[:exit_at + 1])
        if op in ("S2R", "S2UR", "CS2R") and "SR_CTAID.X" not in bare:
            die(f"'{t}' reads something other than the block index", insts[:exit_at + 1])
    if not seq[-1][1].startswith("@"):
        die("the first EXIT is not predicated: the template compiled to something else", insts[:exit_at + 1])
    if not any("SR_CTAID.X" in t for _, t, _ in seq):
        die("no read of SR_CTAID.X before the EXIT", insts[:exit_at + 1])
    found = []
    for i, (_, t, enc) in enumerate(seq):
        v = int.from_bytes(enc, "little")
        for delta in (0, -1, 1):
            for bit in range(0, 128 - 31):
                if (v >> bit) & 0xFFFFFFFF == MARK + delta:
                    found.append((i, bit, delta, t))
    if len(found) != 1:
        die(f"the constant {MARK:#x} (or one off) is in {len(found)} places of the sequence, not one", seq)
    i, bit, delta, t = found[0]
    code = b"".join(enc for _, _, enc in seq)
    nop = next((enc for _, t2, enc in insts if t2 == "NOP"), None)
    pad = 0
    while nop and len(code) % 128:
        code += nop
        pad += 1
    with open(outpath, "w") as f:
        f.write(f"# from {cubin}, function {NAME}; dropped: {dropped or 'nothing'}; {pad} NOPs of padding\n")
        for off, t2, enc in seq:
            f.write(f"# {off:04x} {t2:<48} {enc.hex()}\n")
        f.write(f"bytes={code.hex()}\n")
        f.write(f"imm_bit={i * 128 + bit}\n")
        f.write(f"imm_delta={delta}\n")
    print(f"prologue: {len(seq)} instructions + {pad} NOPs = {len(code)} bytes; constant in '{t}' at bit {bit}, "
          f"S{delta:+d}; dropped {dropped or 'nothing'}")
    for off, t2, enc in seq:
        print(f"  {off:04x}  {t2:<48} {enc.hex()}")


if __name__ == "__main__":
    main()

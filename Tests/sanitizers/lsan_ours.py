"""Reads a LeakSanitizer report (python_asan.py's output) and fails only for leaks of DeviceID's.

The interpreter's own blocks show up in the report in forms that depend on how CPython was
built (a pyenv build names _PyObject_Malloc; Debian's /usr/bin/python3.11 shows unsymbolized
frames), so suppressions alone cannot keep it quiet everywhere. A block is DeviceID's when a
frame of its allocation stack is DeviceID's — as in the deliberate leak of python_asan.py
--leak-on-purpose (Allocation.copy <- deviceid_secret_lookup). Full stacks need the slow unwinder
(ASAN_OPTIONS=fast_unwind_on_malloc=0): neither the release library nor Debian's interpreter
keeps frame pointers.

    python3 lsan_ours.py REPORT [--expect-leak]
"""
import re
import sys


def is_ours(block):
    """A frame in DeviceID: its C entry points, its Swift symbols (mangled with the module name)."""
    return any(re.search(r"\bdeviceid_|DeviceID|libdeviceid", line) for line in block.splitlines()
               if line.lstrip().startswith("#"))


def main():
    text = open(sys.argv[1], errors="replace").read()
    if "python_asan: leak check" not in text:
        print("lsan_ours: the leak check did not run:\n" + text[-3000:])
        return 1
    blocks = re.split(r"\n(?=(?:Direct|Indirect) leak of )", text)
    ours = [b for b in blocks if re.match(r"(?:Direct|Indirect) leak of ", b) and is_ours(b)]
    others = sum(1 for b in blocks if re.match(r"(?:Direct|Indirect) leak of ", b)) - len(ours)
    expect = "--expect-leak" in sys.argv
    print(f"lsan_ours: {len(ours)} leak(s) with a libdeviceid frame, {others} of the interpreter's own (ignored)")
    if ours and not expect:
        print("\n".join(ours)[:6000])
        return 1
    if expect and not ours:
        print("lsan_ours: the deliberate leak was not reported")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

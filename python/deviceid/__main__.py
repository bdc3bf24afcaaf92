"""`python -m deviceid`: the deviceid command, for programs and people who start from Python.

    python -m deviceid get com.example.app
    python -m deviceid --json vendor get com.example

It runs the deviceid command itself — the one command-line contract (docs/cli-json.schema.json):
the same commands, options, help, --json objects and exit codes, because it is the same program
(Tests/python/test_cli_contract.py holds the two to each other). The command is, in order:
$DEVICEID_CLI; the copy a platform wheel carries inside this package; `deviceid` on PATH (the
Debian package python3-deviceid depends on the deviceid package, which installs it).
"""
from __future__ import annotations

import os
import sys

_BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "deviceid")
# 10 + |DEVICEID_E_UNAVAILABLE|, the command's own exit status for "not available here".
_UNAVAILABLE_EXIT = 15


def command() -> str | None:
    """The deviceid command this module runs, or None when there is none."""
    import shutil

    explicit = os.environ.get("DEVICEID_CLI")
    if explicit:  # a path, or a name looked up on PATH as a shell would
        return explicit if os.sep in explicit else shutil.which(explicit)
    if os.access(_BUNDLED, os.X_OK):
        return _BUNDLED
    found = shutil.which("deviceid")
    # Not the wheel's own console script (below), which would run itself forever.
    if found and sys.argv and os.path.realpath(found) == os.path.realpath(sys.argv[0]):
        return None
    return found


def main(argv: list[str] | None = None, *, replace: bool = False) -> int:
    """Runs the deviceid command with `argv` (default: this process's arguments) and returns its
    exit status. Run as `python -m deviceid` or as the console script (`replace`), the command
    replaces this process instead."""
    args = sys.argv[1:] if argv is None else argv
    program = command()
    if program is None:
        sys.stderr.write("deviceid: the deviceid command is not installed: install the deviceid package "
                         "(Debian: apt install deviceid), or the platform wheel, which carries it, or set "
                         "DEVICEID_CLI to its path\n")
        return _UNAVAILABLE_EXIT
    sys.stdout.flush()
    sys.stderr.flush()
    if replace or (argv is None and __name__ == "__main__"):
        # Python ignores SIGPIPE and SIGXFSZ, and exec keeps ignored signals: the command gets
        # the defaults it has when run by a shell (`python -m deviceid ... | head` ends as
        # `deviceid ... | head` does).
        import signal

        for name in ("SIGPIPE", "SIGXFSZ"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        try:
            os.execv(program, [program, *args])
        except OSError as error:
            sys.stderr.write(f"deviceid: cannot run {program}: {error.strerror}\n")
            return _UNAVAILABLE_EXIT
    import subprocess

    try:
        return subprocess.call([program, *args])
    except OSError as error:
        sys.stderr.write(f"deviceid: cannot run {program}: {error.strerror}\n")
        return _UNAVAILABLE_EXIT


def script() -> int:
    """The `deviceid` console script a wheel puts on PATH ([project.scripts] in pyproject.toml):
    the bundled command, in this process's place."""
    return main(replace=True)


if __name__ == "__main__":
    sys.exit(main())

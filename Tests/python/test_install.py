"""`make install` and `make uninstall`: a PREFIX install writes only under PREFIX (the Python
package in PREFIX/lib/python3/dist-packages, for PYTHONPATH), and the default install puts the
package where Debian's /usr/bin/python3 imports it. `make install-verifier` installs the server's
package alone (the Debian package's way), which `make install` leaves out."""
import os
import pathlib
import re
import stat
import sys

import pytest

from harness import ROOT, run

PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def make(*args, dry_run=False):
    result = run(["make", "--no-print-directory", "-C", str(ROOT)] + (["-n"] if dry_run else []) + list(args),
                 timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return result.stdout


def files(top):
    """Every file and symbolic link below top."""
    return sorted(str(p) for p in pathlib.Path(top).rglob("*") if p.is_symlink() or not p.is_dir())


def python_target(commands):
    """The destination directory of the command that installs the Python package."""
    [line] = [line for line in commands.splitlines() if "python/deviceid/py.typed" in line]
    return line.split()[-1].rstrip("/")


@pytest.mark.slow
def test_a_staged_prefix_install_writes_only_under_the_prefix(tmp_path):
    stage, prefix = tmp_path / "stage", "/opt/deviceid-test"
    make("install", f"DESTDIR={stage}", f"PREFIX={prefix}")
    written = files(stage)
    assert any(path.endswith("/libdeviceid.so.2") for path in written), written
    # The file is named for the soname and the version's minor and patch (1.0.0: .so.2.0.0), the
    # soname and the development name link to it.
    library = pathlib.Path(f"{stage}{prefix}/lib")
    minor, patch = version().split(".")[1:]
    assert [p.name for p in library.glob("libdeviceid.so*") if not p.is_symlink()] == [f"libdeviceid.so.2.{minor}.{patch}"]
    assert os.readlink(library / "libdeviceid.so.2") == f"libdeviceid.so.2.{minor}.{patch}"
    assert os.readlink(library / "libdeviceid.so") == "libdeviceid.so.2"
    outside = [path for path in written if not path.startswith(f"{stage}{prefix}/")]
    assert not outside, f"written outside PREFIX: {outside}"

    # The documented way to use it: PYTHONPATH=PREFIX/lib/python3/dist-packages.
    site = f"{stage}{prefix}/lib/python3/dist-packages"
    imported = run([PYTHON, "-c", "import deviceid; print(deviceid.__file__); print(deviceid.uuid4())"],
                   env={"PYTHONPATH": site, "DEVICEID_LIBRARY": f"{stage}{prefix}/lib/libdeviceid.so.2"})
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.startswith(f"{site}/deviceid/__init__.py\n"), imported.stdout

    make("uninstall", f"DESTDIR={stage}", f"PREFIX={prefix}")
    assert files(stage) == [], "make uninstall left files behind"


@pytest.mark.slow
def test_a_prefix_install_without_destdir_leaves_the_system_alone(tmp_path):
    prefix = tmp_path / "prefix"
    # Dry run first: with a Python directory outside the prefix, the real run below would write
    # into (and its uninstall delete from) the system's site-packages.
    for target in ("install", "uninstall"):
        commands = make(target, f"PREFIX={prefix}", dry_run=True)
        # ${prefix}/lib and ${pcfiledir}/../.. in deviceid.pc are relative to the prefix.
        paths = re.findall(r"(?<![\w.@|=}-])/[\w./+-]+", commands)
        # /usr/bin/python3 is run (to byte-compile the package), not written.
        stray = sorted({p for p in paths if not p.startswith((f"{prefix}/", str(ROOT) + "/", "/dev/null"))
                        and p not in (str(ROOT), "/usr/bin/python3")})
        assert not stray, f"make {target} PREFIX={prefix} names paths outside the prefix: {stray}"
    cache = pathlib.Path("/etc/ld.so.cache")
    before = cache.stat().st_mtime_ns if cache.exists() else None
    make("install", f"PREFIX={prefix}")
    assert (prefix / "lib/python3/dist-packages/deviceid/__init__.py").is_file()
    # ldconfig is for the loader's own directories; a private prefix is not one of them.
    assert (cache.stat().st_mtime_ns if cache.exists() else None) == before, "make install rebuilt /etc/ld.so.cache"
    make("uninstall", f"PREFIX={prefix}")
    assert files(prefix) == []


def test_install_verifier_writes_the_server_package_alone_and_uninstall_removes_it(tmp_path):
    stage, prefix = tmp_path / "stage", "/opt/deviceid-test"
    assert "deviceid_verifier" not in make("install", f"DESTDIR={stage}", f"PREFIX={prefix}", dry_run=True)
    make("install-verifier", f"DESTDIR={stage}", f"PREFIX={prefix}")
    site = f"{stage}{prefix}/lib/python3/dist-packages"
    assert sorted(os.listdir(site)) == ["deviceid_verifier", f"deviceid_verifier-{version()}.dist-info"]
    # The server's package imports nothing of the client's (which a whole-system make install may
    # have put on the interpreter's own path beside it).
    ran = run([PYTHON, "-c", "import sys, deviceid_verifier, importlib.metadata as m; "
                             "print(deviceid_verifier.__file__, m.version('deviceid-verifier'), 'deviceid' in sys.modules)"],
              env={"PYTHONPATH": site})
    assert ran.stdout == f"{site}/deviceid_verifier/__init__.py {version()} False\n", ran.stderr
    make("uninstall", f"DESTDIR={stage}", f"PREFIX={prefix}")
    assert files(stage) == []


def version():
    return re.search(r'#define DEVICEID_VERSION_STRING "(.*)"', (ROOT / "include/deviceid.h").read_text()).group(1)


def test_the_default_install_puts_the_package_where_the_system_python_imports_it():
    commands = make("install", dry_run=True)
    target = python_target(commands)
    assert target.startswith("/usr/local/"), target
    # Debian's /usr/bin/python3 has it on sys.path (the CI imports deviceid right after make install).
    path = run([PYTHON, "-c", "import sys; print('\\n'.join(sys.path))"], env={"PYTHONPATH": None}).stdout.split()
    assert str(pathlib.Path(target).parent) in path, (target, path)
    assert make("uninstall", dry_run=True).count(f"rm -rf {target}") == 1


@pytest.mark.slow
def test_each_shell_finds_and_completes_the_installed_completion(tmp_path):
    """After `make install` (PREFIX /usr/local), bash (bash-completion), zsh and fish each find the
    completion where they look by default, and complete with it (fish outside /usr where
    XDG_DATA_DIRS names the prefix, as a desktop session's does). 0.3.0 put zsh's file in
    /usr/local/share/zsh/vendor-completions, which Debian's zsh never searches."""
    stage = tmp_path / "stage"
    make("install", f"DESTDIR={stage}", "PREFIX=/usr/local")
    # The staged tree in /usr/local's place, in a mount namespace of its own: the command is on
    # PATH there too, which fish needs before it loads a command's completion.
    script = f"""
        set -e
        mount --bind {stage}/usr/local /usr/local
        export PATH=/usr/local/bin:/usr/bin:/bin
        bash -c 'source /usr/share/bash-completion/bash_completion
                 __load_completion deviceid
                 function=$(complete -p deviceid | sed "s/.*-F \\([^ ]*\\).*/\\1/")
                 COMP_WORDS=(deviceid secret ""); COMP_CWORD=2; COMP_LINE="deviceid secret "; COMP_POINT=16
                 $function deviceid "" secret
                 echo "bash: ${{COMPREPLY[*]}}"'
        zsh -f -c 'autoload -Uz compinit && compinit -u -D && print -r -- "zsh: ${{_comps[deviceid]}} ${{functions_source[_deviceid]:-$(whence -v _deviceid)}}"'
        XDG_DATA_DIRS=/usr/local/share:/usr/share fish -c 'complete -C "deviceid secret "' \\
            | cut -f1 | sort | tr '\\n' ' ' | sed 's/^/fish: /'; echo
    """
    result = run(["unshare", "--mount", "--propagation", "private", "bash", "-c", script], env={"HOME": str(tmp_path)})
    assert result.returncode == 0, result.stdout + result.stderr
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines() if ": " in line)
    assert lines["bash"].split() == ["store", "lookup", "delete"], result.stdout + result.stderr
    assert lines["zsh"].startswith("_deviceid ") and "/usr/local/share/zsh/site-functions/_deviceid" in lines["zsh"], \
        result.stdout
    assert lines["fish"].split() == ["delete", "lookup", "store"], result.stdout + result.stderr
    # compinit -d FILE replaces FILE with its dump: given /dev/null, as root, it replaced the
    # machine's /dev/null with a regular file (seen once). -D dumps nothing.
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null is no longer a device"

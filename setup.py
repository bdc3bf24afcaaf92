"""The platform wheel of the distribution deviceid-linux (imported as `deviceid`): the ctypes
package with libdeviceid.so.2 inside, loaded before any other, and the deviceid command as
deviceid/bin/deviceid, which `python -m deviceid` and the `deviceid` console script run.

    make wheel                              # the release wheel: built against Debian 11's glibc
    python3 -m pip wheel . -w dist          # builds both with `make build` (Swift 6), for this glibc
    DEVICEID_WHEEL_LIBRARY=/path/libdeviceid.so.2 DEVICEID_WHEEL_CLI=/path/deviceid \
        python3 -m pip wheel . -w dist      # prebuilt ones (both, or neither)

`python3 setup.py dist_info` (make install) writes the package's metadata alone, for installs
that are not wheels (make install, the Debian package), so that importlib.metadata knows them.

The library and the command are Embedded Swift: their only NEEDED entries are glibc's (libsecret,
GLib, libcrypto, libdbus and tpm2-tss are loaded on first use, and found missing with a status),
so the wheel is manylinux. Its tag is read off the binaries, never assumed: the newest GLIBC_2.N
symbol version they need gives manylinux_2_N (N rounded up to a glibc that has a policy) (`make wheel` builds against glibc 2.31, Debian 11
and Ubuntu 20.04; a build against this machine's glibc gets this machine's), and a NEEDED entry
outside glibc gives linux_<arch>. `scripts/check-wheel` has auditwheel agree with the claim.
The Python code runs on any CPython 3, so the wheel is py3-none.
"""
import os
import re
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # then setuptools' own, or none: dist_info of setuptools < 70.1 needs wheel too
    bdist_wheel = None

# What a manylinux wheel may need (PEP 600: glibc's own libraries).
GLIBC_LIBRARIES = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
                   "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "ld-linux-riscv64-lp64d.so.1"}

# glibc versions with a manylinux policy below 2.34 (every one from 2.34 on has one).
MANYLINUX_POLICIES = (5, 12, 17, 24, 26, 27, 28, 31)

NO_SWIFT = """building the deviceid wheel needs Swift 6 on PATH (https://www.swift.org/install/linux/),
which builds libdeviceid.so.2 and the deviceid command; or give prebuilt ones, both:
    DEVICEID_WHEEL_LIBRARY=/path/libdeviceid.so.2 DEVICEID_WHEEL_CLI=/path/deviceid python3 -m pip wheel . -w dist
(docs/INSTALL.md, "The Python wheel")."""


# ELF e_machine -> the architecture's name in platform tags (PEP 600: as platform.machine() says it).
ELF_MACHINES = {62: "x86_64", 183: "aarch64", 243: "riscv64"}


def elf_machine(binary):
    """The architecture a binary was built for (a cross build's is not this machine's)."""
    with open(binary, "rb") as f:
        header = f.read(20)
    if header[:4] != b"\x7fELF" or header[5] != 1:
        raise SystemExit(f"deviceid wheel: {binary} is not a little-endian ELF file")
    machine = int.from_bytes(header[18:20], "little")
    if machine not in ELF_MACHINES:
        raise SystemExit(f"deviceid wheel: {binary} is for ELF machine {machine}, which has no wheel tag here")
    return ELF_MACHINES[machine]


def platform_tag(binaries):
    """manylinux_2_N_<arch> for binaries that need only glibc, N its newest symbol version they
    use; linux_<arch> otherwise."""
    arch = elf_machine(binaries[0])
    newest = 0
    for binary in binaries:
        dynamic = subprocess.run(["objdump", "-p", binary], check=True, capture_output=True, text=True).stdout
        needed = set(re.findall(r"^\s*NEEDED\s+(\S+)", dynamic, re.M))
        if needed - GLIBC_LIBRARIES:
            return f"linux_{arch}"
        newest = max([newest, *(int(m) for m in re.findall(r"\bGLIBC_2\.(\d+)", dynamic))])
    # The tags auditwheel has policies for (its manylinux-policy.json): the oldest that allows them.
    policy = next((n for n in MANYLINUX_POLICIES if n >= newest), newest)
    return f"manylinux_2_{policy}_{arch}"


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        library = os.environ.get("DEVICEID_WHEEL_LIBRARY")
        command = os.environ.get("DEVICEID_WHEEL_CLI")
        if bool(library) != bool(command):
            raise SystemExit("deviceid wheel: give DEVICEID_WHEEL_LIBRARY and DEVICEID_WHEEL_CLI together "
                             "(the wheel carries both), or neither to build them")
        if not library:
            if shutil.which("swift") is None:
                raise SystemExit("deviceid wheel: " + NO_SWIFT)
            subprocess.run(["make", "build"], check=True)
            built = os.path.join(".build", "embedded", "release")
            library = os.path.join(built, "libdeviceid.so")
            command = os.path.join(built, "deviceid-cli")
        os.makedirs(os.path.join(self.build_lib, "deviceid", "bin"), exist_ok=True)
        targets = []
        for source, target in ((library, os.path.join("deviceid", "libdeviceid.so.2")),
                               (command, os.path.join("deviceid", "bin", "deviceid"))):
            target = os.path.join(self.build_lib, target)
            shutil.copyfile(source, target)
            os.chmod(target, 0o755)
            # STRIP: the binutils of the binaries' architecture (scripts/build-wheel names a cross one).
            subprocess.run([os.environ.get("STRIP", "strip"), "--strip-unneeded", target], check=True)
            targets.append(target)
        self.distribution.deviceid_platform = platform_tag(targets)


class NativeDistribution(Distribution):
    def has_ext_modules(self):
        return True  # the package goes to platlib, where a native library belongs


commands = {"build_py": BuildWithLibrary}
if bdist_wheel is not None:
    class PlatformWheel(bdist_wheel):
        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False  # it carries a native library

        def get_tag(self):
            # Read off the binaries the build put in the wheel (BuildWithLibrary).
            built = getattr(self.distribution, "deviceid_platform", None)
            return ("py3", "none", built or super().get_tag()[2])

    commands["bdist_wheel"] = PlatformWheel


# The version has one source, the header (as for make, the .pc file and the CMake package).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "include", "deviceid.h")) as header:
    VERSION = re.search(r'#define DEVICEID_VERSION_STRING "(.*)"', header.read()).group(1)

# deviceid-linux[verifier]: an alias of the server's own distribution (server/: deviceid-verifier,
# pure Python, no part of this one) with its service and PostgreSQL extras, at this version.
EXTRAS = {"verifier": [f"deviceid-verifier[service,postgresql] == {VERSION}"]}

setup(version=VERSION, extras_require=EXTRAS, cmdclass=commands, distclass=NativeDistribution)

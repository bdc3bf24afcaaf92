"""The platform wheel: the ctypes package with libdeviceid.so.1 inside, loaded before any other,
and the deviceid command as deviceid/bin/deviceid, which `python -m deviceid` runs.

    python3 -m pip wheel . -w dist          # builds both with `make build` (Swift 6)
    DEVICEID_WHEEL_LIBRARY=/path/libdeviceid.so.1 DEVICEID_WHEEL_CLI=/path/deviceid \
        python3 -m pip wheel . -w dist      # prebuilt ones

`python3 setup.py dist_info` (make install) writes the package's metadata alone, for installs
that are not wheels (make install, the Debian package), so that importlib.metadata knows them.

The library is the Embedded Swift build: it needs libc, libsecret-1, GLib and libcrypto from the
system, which manylinux does not allow a wheel to assume, so the tag is linux_<arch> (what
`auditwheel show` reports for it); the Python code runs on any CPython 3, so the wheel is py3-none.
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


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        library = os.environ.get("DEVICEID_WHEEL_LIBRARY")
        command = os.environ.get("DEVICEID_WHEEL_CLI")
        if not library or not command:
            subprocess.run(["make", "build"], check=True)
            built = os.path.join(".build", "embedded", "release")
            library = library or os.path.join(built, "libdeviceid.so")
            command = command or os.path.join(built, "deviceid-cli")
        os.makedirs(os.path.join(self.build_lib, "deviceid", "bin"), exist_ok=True)
        for source, target in ((library, os.path.join("deviceid", "libdeviceid.so.1")),
                               (command, os.path.join("deviceid", "bin", "deviceid"))):
            target = os.path.join(self.build_lib, target)
            shutil.copyfile(source, target)
            os.chmod(target, 0o755)
            subprocess.run(["strip", "--strip-unneeded", target], check=True)


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
            return ("py3", "none", super().get_tag()[2])

    commands["bdist_wheel"] = PlatformWheel


# The version has one source, the header (as for make, the .pc file and the CMake package).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "include", "deviceid.h")) as header:
    VERSION = re.search(r'#define DEVICEID_VERSION_STRING "(.*)"', header.read()).group(1)

setup(version=VERSION, cmdclass=commands, distclass=NativeDistribution)

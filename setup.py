"""The platform wheel: the ctypes package with libdeviceid.so.1 inside, loaded before any other.

    python3 -m pip wheel . -w dist          # builds the library with `make build` (Swift 6)
    DEVICEID_WHEEL_LIBRARY=/path/libdeviceid.so.1 python3 -m pip wheel . -w dist   # a prebuilt one

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
from wheel.bdist_wheel import bdist_wheel


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        library = os.environ.get("DEVICEID_WHEEL_LIBRARY")
        if not library:
            subprocess.run(["make", "build"], check=True)
            library = os.path.join(".build", "embedded", "release", "libdeviceid.so")
        target = os.path.join(self.build_lib, "deviceid", "libdeviceid.so.1")
        shutil.copyfile(library, target)
        os.chmod(target, 0o755)
        subprocess.run(["strip", "--strip-unneeded", target], check=True)


class NativeDistribution(Distribution):
    def has_ext_modules(self):
        return True  # the package goes to platlib, where a native library belongs


class PlatformWheel(bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False  # it carries a native library

    def get_tag(self):
        return ("py3", "none", super().get_tag()[2])


# The version has one source, the header (as for make, the .pc file and the CMake package).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "include", "deviceid.h")) as header:
    VERSION = re.search(r'#define DEVICEID_VERSION_STRING "(.*)"', header.read()).group(1)

setup(version=VERSION, cmdclass={"build_py": BuildWithLibrary, "bdist_wheel": PlatformWheel}, distclass=NativeDistribution)

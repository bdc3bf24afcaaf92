"""The pure-Python wheel of the distribution deviceid-verifier (imported as `deviceid_verifier`):
py3-none-any, its metadata in pyproject.toml. Only the version is here, read from the one place
that owns it, include/deviceid.h at the top of this checkout.

    make verifier-wheel                                                  # dist/deviceid_verifier-VERSION-py3-none-any.whl
    python3 -m pip wheel --no-deps --no-build-isolation server -w dist   # the same by hand
"""
import os
import re

from setuptools import setup

HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "include", "deviceid.h")
with open(HEADER) as header:
    VERSION = re.search(r'#define DEVICEID_VERSION_STRING "(.*)"', header.read()).group(1)

setup(version=VERSION)

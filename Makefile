# Builds and installs libdeviceid, its header and .pc file, the `deviceid` command and the Python
# package. `make install PREFIX=/opt/x DESTDIR=/tmp/stage` stages elsewhere. The server side
# (server/: deviceid-verifier, pure Python) has targets of its own: install-verifier, verifier-wheel.
PREFIX ?= /usr/local
override PREFIX := $(patsubst %/,%,$(PREFIX))
DESTDIR ?=
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
CMAKEDIR ?= $(LIBDIR)/cmake/deviceid
MANDIR ?= $(PREFIX)/share/man
# Completion where each shell looks by default. bash: bash-completion's completionsdir under this
# prefix (it searches XDG_DATA_DIRS, /usr/local/share:/usr/share unless set). zsh: Debian's zsh
# searches /usr/local/share/zsh/site-functions and, under /usr, vendor-completions — not
# $(PREFIX)/share/zsh/vendor-completions for any other prefix. fish: vendor_completions.d, which
# fish finds outside /usr where XDG_DATA_DIRS names the prefix (a desktop session's does).
BASHCOMPDIR ?= $(or $(shell pkg-config --define-variable=datadir=$(PREFIX)/share --variable=completionsdir \
	bash-completion 2>/dev/null),$(PREFIX)/share/bash-completion/completions)
ifeq ($(PREFIX),/usr)
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/vendor-completions
else
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
endif
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
# The system's Python (Debian's /usr/bin/python3), not whichever python3 is first on PATH (a pyenv
# or venv one); PYTHON=... chooses another.
PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)
PYCOMPILE ?= yes
PYTHON_INSTALLER ?= make
# Where the Python package goes. The default install (PREFIX /usr/local): the interpreter's own
# site-packages (Debian: /usr/local/lib/python3.X/dist-packages), so that `import deviceid` works
# right after install. Any other PREFIX: Debian's layout under it, $(PREFIX)/lib/python3/dist-packages,
# for PYTHONPATH; like every other path, nothing of a prefix install lands outside the prefix.
ifeq ($(PREFIX),/usr/local)
PYTHONDIR ?= $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
else
PYTHONDIR ?= $(PREFIX)/lib/python3/dist-packages
endif

VERSION := $(shell sed -n 's/^\#define DEVICEID_VERSION_STRING "\(.*\)"/\1/p' include/deviceid.h)
VERSION_MAJOR := $(word 1,$(subst ., ,$(VERSION)))
VERSION_MINOR := $(word 2,$(subst ., ,$(VERSION)))
# The soname's number is the ABI generation, not the version's major: 0.x was .so.1, and 1.0's
# context-first API (docs/MIGRATING.md) is .so.2, packaged as libdeviceid2 (Debian policy 8.1).
SONAME := libdeviceid.so.2
# The installed file is named for the soname, then the version's minor and patch (libtool's and
# Debian's habit: libdeviceid.so.2.0.0 for 1.0.0, libdeviceid.so.2.1.0 for 1.1.0), never for the
# version's major, which is not the ABI's.
VERSION_PATCH := $(word 3,$(subst ., ,$(VERSION)))
REALNAME := $(SONAME).$(VERSION_MINOR).$(VERSION_PATCH)
# The library and the CLI are Embedded Swift (see Package.swift and scripts/swift-embedded): no
# Swift runtime, no libstdc++.
# ARCH (Debian's name) other than this machine's cross-builds: `make build ARCH=arm64` (or riscv64)
# against the oldest Debian root of that architecture (scripts/sysroot, made once by mmdebstrap:
# Debian 11 for arm64, so that the binaries need glibc 2.31 or newer, as the release wheel's do;
# Debian 13 for riscv64); the manual pages come from the
# built command run through qemu-user (scripts/binfmt). docs/INSTALL.md "Other architectures".
NATIVE_ARCH := $(shell dpkg --print-architecture 2>/dev/null)
# A comma, for the arguments of make functions that must hold one.
, := ,
ARCH ?= $(NATIVE_ARCH)
ifeq ($(ARCH),$(NATIVE_ARCH))
BUILD := .build/embedded/release
SWIFT_BUILD := scripts/swift-embedded --build-path .build/embedded
RUN_BUILT :=
STRIP ?= strip
else
BUILD := .build/$(ARCH)/release
STRIP ?= $(subst arm64,aarch64,$(ARCH))-linux-gnu-strip
SYSROOT = $$(scripts/sysroot oldest $(ARCH))
SWIFT_BUILD = scripts/swift-embedded --arch $(ARCH) --sysroot $(SYSROOT) --build-path .build/$(ARCH)
RUN_BUILT = QEMU_LD_PREFIX=$(SYSROOT)
endif

.PHONY: all build man install install-strip install-verifier uninstall test clean deb wheel verifier-wheel

all: build man

build:
	$(SWIFT_BUILD) --product deviceid
	$(SWIFT_BUILD) --product deviceid-cli

# The manual pages, from the header (section 3) and the CLI's own help (section 1).
man: build
	rm -rf $(BUILD)/man
	$(RUN_BUILT) scripts/gen-man $(BUILD)/man $(BUILD)/deviceid-cli

# `make install` installs unstripped binaries, as GNU make conventions and debhelper want (dh_strip
# makes the -dbgsym packages from them); `make install-strip` strips them.
INSTALL_STRIP ?=
# deviceid.pc: a system prefix (/usr) keeps absolute paths, which pkg-config filters from flags;
# any other prefix is relocatable: prefix is found from the .pc file's own directory (${pcfiledir}),
# and libdir and includedir are relative to it, so an installed tree may be moved.
ifeq ($(PREFIX),/usr)
PC_PREFIX := $(PREFIX)
else
PC_PREFIX = $${pcfiledir}/$(shell realpath -m -s --relative-to=$(PKGCONFIGDIR) $(PREFIX))
endif
pc_path = $(if $(filter $(PREFIX)/%,$(1)),$${prefix}/$(patsubst $(PREFIX)/%,%,$(1)),$(1))

install: build man
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(PYTHONDIR)/deviceid $(DESTDIR)$(CMAKEDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -m 0755 $(INSTALL_STRIP) $(BUILD)/libdeviceid.so $(DESTDIR)$(LIBDIR)/$(REALNAME)
	ln -sfn $(REALNAME) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sfn $(SONAME) $(DESTDIR)$(LIBDIR)/libdeviceid.so
	install -m 0644 include/deviceid.h include/deviceid-techniques.h $(DESTDIR)$(INCLUDEDIR)/
	sed -e 's|@PREFIX@|$(PC_PREFIX)|' -e 's|@LIBDIR@|$(call pc_path,$(LIBDIR))|' \
		-e 's|@INCLUDEDIR@|$(call pc_path,$(INCLUDEDIR))|' -e 's|@VERSION@|$(VERSION)|' \
		pkgconfig/deviceid.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/deviceid.pc
	cmake -DOUT=$(DESTDIR)$(CMAKEDIR) -DPREFIX=$(PREFIX) -DLIBDIR=$(LIBDIR) -DINCLUDEDIR=$(INCLUDEDIR) \
		-DCMAKEDIR=$(CMAKEDIR) -DVERSION=$(VERSION) -P cmake/generate.cmake
	install -m 0644 $(BUILD)/man/man1/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(BUILD)/man/man3/*.3 $(DESTDIR)$(MANDIR)/man3/
	install -m 0755 $(INSTALL_STRIP) $(BUILD)/deviceid-cli $(DESTDIR)$(BINDIR)/deviceid
	install -m 0644 completions/deviceid.bash $(DESTDIR)$(BASHCOMPDIR)/deviceid
	install -m 0644 completions/_deviceid $(DESTDIR)$(ZSHCOMPDIR)/_deviceid
	install -m 0644 completions/deviceid.fish $(DESTDIR)$(FISHCOMPDIR)/deviceid.fish
	install -m 0644 python/deviceid/*.py python/deviceid/py.typed $(DESTDIR)$(PYTHONDIR)/deviceid/
	$(call python_metadata,.,deviceid_linux)
	$(call python_compile,deviceid)
# The loader's cache, only when LIBDIR is one of its directories (a private prefix is not).
	if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null \
		&& ldconfig -v -N -X 2>/dev/null | sed -n 's|^\(/[^:]*\):.*|\1|p' | xargs -r readlink -f \
			| grep -qxF "$$(readlink -f $(LIBDIR))"; then ldconfig; fi

install-strip:
	$(MAKE) install INSTALL_STRIP="-s --strip-program=$(STRIP)"

# The server's package (server/deviceid_verifier) and its metadata in PYTHONDIR, for installs that
# are not its wheel (the Debian package python3-deviceid-verifier). `make install` leaves it out: a
# device needs no verifier, and a server none of the client. Nothing is built.
install-verifier:
	cd server && find deviceid_verifier \( -name '*.py' -o -name py.typed -o -name '*.schema.json' \) \
		-exec install -D -m 0644 {} $(abspath $(DESTDIR)$(PYTHONDIR))/{} \;
	$(call python_metadata,server,deviceid_verifier)
	$(call python_compile,deviceid_verifier)

# $(call python_metadata,SOURCE,NAME): the metadata of the distribution in SOURCE (NAME-VERSION.dist-info),
# written by setuptools from its pyproject.toml (setuptools >= 61 and, before setuptools 70.1,
# wheel: python3-setuptools python3-wheel), so that importlib.metadata.version() answers for this
# install as for a wheel's. INSTALLER names who installed it (PEP 376): pip then refuses to
# uninstall it over the owner's head.
define python_metadata
	rm -rf .build/dist-info/$(2)-* $(DESTDIR)$(PYTHONDIR)/$(2)-*.dist-info && mkdir -p .build/dist-info
	cd $(1) && { $(PYTHON) setup.py -q dist_info --output-dir $(abspath .build/dist-info) >/dev/null 2>&1 \
		|| $(PYTHON) setup.py -q dist_info --output-dir $(abspath .build/dist-info); }
	rm -rf $(1)/*.egg-info $(1)/python/*.egg-info
	cp -r .build/dist-info/$(2)-$(VERSION).dist-info $(DESTDIR)$(PYTHONDIR)/
	echo $(PYTHON_INSTALLER) > $(DESTDIR)$(PYTHONDIR)/$(2)-$(VERSION).dist-info/INSTALLER
	chmod -R u=rwX,go=rX $(DESTDIR)$(PYTHONDIR)/$(2)-$(VERSION).dist-info
endef
# $(call python_compile,PACKAGE): byte-compiled, as pip and dh_python3 do: without it every import
# compiles the modules again wherever the directory is not writable or PYTHONDONTWRITEBYTECODE is
# set (6 ms of a 20 ms `import deviceid; get()`). PYCOMPILE=no for packagers whose tools compile
# at install time.
define python_compile
	if [ "$(PYCOMPILE)" != no ]; then $(PYTHON) -m compileall -q -d $(PYTHONDIR)/$(1) $(DESTDIR)$(PYTHONDIR)/$(1); fi
endef

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libdeviceid.so* $(DESTDIR)$(INCLUDEDIR)/deviceid.h $(DESTDIR)$(INCLUDEDIR)/deviceid-techniques.h \
		$(DESTDIR)$(PKGCONFIGDIR)/deviceid.pc $(DESTDIR)$(BINDIR)/deviceid \
		$(DESTDIR)$(MANDIR)/man1/deviceid.1 $(DESTDIR)$(MANDIR)/man3/deviceid.3 $(DESTDIR)$(MANDIR)/man3/deviceid_*.3 \
		$(DESTDIR)$(BASHCOMPDIR)/deviceid $(DESTDIR)$(ZSHCOMPDIR)/_deviceid $(DESTDIR)$(FISHCOMPDIR)/deviceid.fish
	rm -rf $(DESTDIR)$(CMAKEDIR)
	rm -rf $(DESTDIR)$(PYTHONDIR)/deviceid $(DESTDIR)$(PYTHONDIR)/deviceid_linux-*.dist-info \
		$(DESTDIR)$(PYTHONDIR)/deviceid_verifier $(DESTDIR)$(PYTHONDIR)/deviceid_verifier-*.dist-info

# The release wheel, manylinux (built against Debian 11's glibc in a sysroot): dist/deviceid_linux-*.whl,
# for ARCH (default this machine's; arm64 and riscv64 cross-build).
wheel:
	scripts/build-wheel dist $(ARCH)

# The server's wheel (server/), pure Python: DIST/deviceid_verifier-VERSION-py3-none-any.whl. Nothing
# is compiled and no index is asked (Debian's python3-pip, -setuptools, -wheel).
DIST ?= dist
verifier-wheel:
	$(PYTHON) -m pip wheel --no-deps --no-build-isolation --no-index -q ./server -w $(DIST)
	rm -rf server/build server/*.egg-info

test:
	scripts/test

# Debian packages (debian/, debhelper) into dist/deb, checked with lintian. A Swift 6 toolchain
# must be on PATH; scripts/release-check installs them into clean Debian roots.
# ARCH other than this machine's: a cross build (dpkg-buildpackage -a; Debian's multiarch -dev packages
# of the build dependencies for ARCH, docs/INSTALL.md "Other architectures").
deb:
	dpkg-buildpackage -b -us -uc $(if $(filter-out $(NATIVE_ARCH),$(ARCH)),-a$(ARCH) -Pcross$(,)nocheck)
	rm -rf dist/deb && mkdir -p dist/deb
	mv ../deviceid_$(VERSION)_*.deb ../libdeviceid2_$(VERSION)_*.deb ../libdeviceid-dev_$(VERSION)_*.deb \
		../python3-deviceid_$(VERSION)_all.deb ../python3-deviceid-verifier_$(VERSION)_all.deb \
		../deviceid-dbgsym_$(VERSION)_*.deb \
		../libdeviceid2-dbgsym_$(VERSION)_*.deb ../deviceid_$(VERSION)_*.changes \
		../deviceid_$(VERSION)_*.buildinfo dist/deb/
# Errors fail the build; warnings and information tags (-I) are shown, with their explanations.
	lintian --fail-on error --display-info --info dist/deb/deviceid_$(VERSION)_*.changes | tee dist/deb/lintian.txt

clean:
	rm -rf .build

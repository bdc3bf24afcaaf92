# Builds and installs libdeviceid, its header and .pc file, the `deviceid` command and the Python
# package. `make install PREFIX=/opt/x DESTDIR=/tmp/stage` stages elsewhere.
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
# The library and the CLI are Embedded Swift (see Package.swift and scripts/swift-embedded): no
# Swift runtime, no libstdc++.
BUILD := .build/embedded/release
SWIFT_BUILD := scripts/swift-embedded --build-path .build/embedded

.PHONY: all build man install install-strip uninstall test clean deb wheel

all: build man

build:
	$(SWIFT_BUILD) --product deviceid
	$(SWIFT_BUILD) --product deviceid-cli

# The manual pages, from the header (section 3) and the CLI's own help (section 1).
man: build
	rm -rf $(BUILD)/man
	scripts/gen-man $(BUILD)/man $(BUILD)/deviceid-cli

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
		$(DESTDIR)$(PYTHONDIR)/deviceid $(DESTDIR)$(PYTHONDIR)/deviceid_verifier $(DESTDIR)$(CMAKEDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -m 0755 $(INSTALL_STRIP) $(BUILD)/libdeviceid.so $(DESTDIR)$(LIBDIR)/libdeviceid.so.$(VERSION)
	ln -sfn libdeviceid.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
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
	install -m 0644 python/deviceid_verifier/*.py python/deviceid_verifier/py.typed $(DESTDIR)$(PYTHONDIR)/deviceid_verifier/
	for d in _store _service schemas; do install -d $(DESTDIR)$(PYTHONDIR)/deviceid_verifier/$$d || exit 1; done
	install -m 0644 python/deviceid_verifier/_store/*.py $(DESTDIR)$(PYTHONDIR)/deviceid_verifier/_store/
	install -m 0644 python/deviceid_verifier/_service/*.py $(DESTDIR)$(PYTHONDIR)/deviceid_verifier/_service/
	install -m 0644 python/deviceid_verifier/schemas/*.json $(DESTDIR)$(PYTHONDIR)/deviceid_verifier/schemas/
# The package's metadata (deviceid_linux-VERSION.dist-info: the distribution is deviceid-linux), written by setuptools from pyproject.toml
# (setuptools >= 61 and, before setuptools 70.1, wheel: python3-setuptools python3-wheel), so that
# importlib.metadata.version("deviceid-linux") answers for this install as for a wheel's. INSTALLER
# names who installed it (PEP 376): pip then refuses to uninstall it over the owner's head.
	rm -rf $(BUILD)/dist-info $(DESTDIR)$(PYTHONDIR)/deviceid_linux-*.dist-info && mkdir -p $(BUILD)/dist-info
	$(PYTHON) setup.py -q dist_info --output-dir $(abspath $(BUILD)/dist-info) >/dev/null 2>&1 \
		|| $(PYTHON) setup.py -q dist_info --output-dir $(abspath $(BUILD)/dist-info)
	cp -r $(BUILD)/dist-info/deviceid_linux-$(VERSION).dist-info $(DESTDIR)$(PYTHONDIR)/
	echo $(PYTHON_INSTALLER) > $(DESTDIR)$(PYTHONDIR)/deviceid_linux-$(VERSION).dist-info/INSTALLER
	chmod -R u=rwX,go=rX $(DESTDIR)$(PYTHONDIR)/deviceid_linux-$(VERSION).dist-info
# Byte-compiled, as pip and dh_python3 do: without it every import compiles the modules again
# wherever the directory is not writable or PYTHONDONTWRITEBYTECODE is set (6 ms of a 20 ms
# `import deviceid; get()`). PYCOMPILE=no for packagers whose tools compile at install time.
	if [ "$(PYCOMPILE)" != no ]; then for p in deviceid deviceid_verifier; do $(PYTHON) -m compileall -q \
		-d $(PYTHONDIR)/$$p $(DESTDIR)$(PYTHONDIR)/$$p || exit 1; done; fi
# The loader's cache, only when LIBDIR is one of its directories (a private prefix is not).
	if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null \
		&& ldconfig -v -N -X 2>/dev/null | sed -n 's|^\(/[^:]*\):.*|\1|p' | xargs -r readlink -f \
			| grep -qxF "$$(readlink -f $(LIBDIR))"; then ldconfig; fi

install-strip:
	$(MAKE) install INSTALL_STRIP=-s

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libdeviceid.so* $(DESTDIR)$(INCLUDEDIR)/deviceid.h $(DESTDIR)$(INCLUDEDIR)/deviceid-techniques.h \
		$(DESTDIR)$(PKGCONFIGDIR)/deviceid.pc $(DESTDIR)$(BINDIR)/deviceid \
		$(DESTDIR)$(MANDIR)/man1/deviceid.1 $(DESTDIR)$(MANDIR)/man3/deviceid.3 $(DESTDIR)$(MANDIR)/man3/deviceid_*.3 \
		$(DESTDIR)$(BASHCOMPDIR)/deviceid $(DESTDIR)$(ZSHCOMPDIR)/_deviceid $(DESTDIR)$(FISHCOMPDIR)/deviceid.fish
	rm -rf $(DESTDIR)$(CMAKEDIR)
	rm -rf $(DESTDIR)$(PYTHONDIR)/deviceid $(DESTDIR)$(PYTHONDIR)/deviceid_verifier $(DESTDIR)$(PYTHONDIR)/deviceid_linux-*.dist-info

# The release wheel, manylinux (built against Debian 11's glibc in a sysroot): dist/deviceid_linux-*.whl.
wheel:
	scripts/build-wheel dist

test:
	scripts/test

# Debian packages (debian/, debhelper) into dist/deb, checked with lintian. A Swift 6 toolchain
# must be on PATH; scripts/release-check installs them into clean Debian roots.
deb:
	dpkg-buildpackage -b -us -uc
	rm -rf dist/deb && mkdir -p dist/deb
	mv ../deviceid_$(VERSION)_*.deb ../libdeviceid2_$(VERSION)_*.deb ../libdeviceid-dev_$(VERSION)_*.deb \
		../python3-deviceid_$(VERSION)_all.deb ../deviceid-dbgsym_$(VERSION)_*.deb \
		../libdeviceid2-dbgsym_$(VERSION)_*.deb ../deviceid_$(VERSION)_*.changes \
		../deviceid_$(VERSION)_*.buildinfo dist/deb/
# Errors fail the build; warnings and information tags (-I) are shown, with their explanations.
	lintian --fail-on error --display-info --info dist/deb/deviceid_$(VERSION)_*.changes | tee dist/deb/lintian.txt

clean:
	rm -rf .build

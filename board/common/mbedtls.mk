# mbedtls from Debian's source package, built as static libraries with the board's musl
# toolchain and cached in $(O)/mbedtls. The version is pinned, and the .dsc's SHA-256 checked
# (the .dsc in turn carries the checksums dpkg-source verifies for the tarballs).
MBEDTLS_DEB_VERSION := 2.28.3-1
MBEDTLS_VERSION := 2.28.3
MBEDTLS_DSC_SHA256 := a8bf91b5ffb40654efb0ebe0c962ac1e87b8eed5e104880982eaa70dd4bb33e3

# Downloads are shared by all boards; the build is per board.
DL_DIR ?= $(srctree)/build/dl
MBEDTLS_DIR := $(obj)/mbedtls
MBEDTLS_INC := $(MBEDTLS_DIR)/include
MBEDTLS_LIBS := $(MBEDTLS_DIR)/lib/libmbedtls.a $(MBEDTLS_DIR)/lib/libmbedx509.a \
	$(MBEDTLS_DIR)/lib/libmbedcrypto.a
MBEDTLS_STAMP := $(MBEDTLS_DIR)/.built-$(MBEDTLS_DEB_VERSION)

# -flto: the library's objects join each program's link-time optimisation, which keeps only
# what the program reaches (a small TLS program: 541 KB -> 299 KB, TOOLCHAIN.md); LTO
# archives need gcc-ar, whose symbol index sees into the LTO objects.
MBEDTLS_CFLAGS := -O2 $(BOARD_CFLAGS) -ffunction-sections -fdata-sections -flto
MBEDTLS_AR := $(CROSS_COMPILE)gcc-ar
# With LTO, mbedtls' code is compiled again at each program's link, under the program's
# -Werror: gcc 12 then sees a false stringop-overflow in ssl_tls.c (SHA-384's 48 bytes
# finished into a 64-byte view). Programs linking mbedtls add these link flags.
MBEDTLS_LDFLAGS := -Wno-stringop-overflow

# CONFIG_UPLOADER_MBEDTLS_TRIM (the default, also before a .config exists) builds with
# uploader/mbedtls-config.h in place of mbedtls' own config.h. The choice is kept in a file
# that changes only when the choice does, so the library is rebuilt when it or the header
# changes, and not otherwise.
MBEDTLS_CONFIG := $(if $(shell grep -qs '^\# CONFIG_UPLOADER_MBEDTLS_TRIM is not set' \
	$(obj)/.config && echo n),,$(srctree)/uploader/mbedtls-config.h)
MBEDTLS_CHOICE := $(obj)/.mbedtls-config
$(MBEDTLS_CHOICE): FORCE
	@mkdir -p $(dir $@)
	@if [ "$$(cat $@ 2>/dev/null)" != '$(or $(MBEDTLS_CONFIG),default)' ]; then \
		echo '$(or $(MBEDTLS_CONFIG),default)' >$@; fi

# $(call mbedtls_build,OUT_DIR,CONFIG_H or nothing,WHAT): the recipe of one build of the
# library (the target is its stamp), its log beside OUT_DIR.
define mbedtls_build
	$(call say,MBEDTLS,$(MBEDTLS_DEB_VERSION) for $(BOARD)$(3))
	$(Q)sh board/common/mbedtls.sh "$(DL_DIR)" "$(1)" "$(MBEDTLS_DEB_VERSION)" \
		"$(MBEDTLS_VERSION)" "$(MBEDTLS_DSC_SHA256)" "$(CC)" "$(MBEDTLS_AR)" \
		"$(MBEDTLS_CFLAGS)" "$(2)" \
		$(if $(filter 1,$(V)),,>$(1).log 2>&1) \
		|| { echo "mbedtls build failed; see $(1).log"; exit 1; }
	$(Q)touch $@
endef

$(MBEDTLS_STAMP): board/common/mbedtls.sh board/common/mbedtls.mk board/$(BOARD)/board.mk \
		$(MBEDTLS_CHOICE) $(MBEDTLS_CONFIG) | $(NEED_DEPS)
	$(call mbedtls_build,$(MBEDTLS_DIR),$(MBEDTLS_CONFIG),$(if $(MBEDTLS_CONFIG), (trimmed)))

$(MBEDTLS_LIBS): $(MBEDTLS_STAMP)
	@:

# A second build with the server side, for the collector built for the board (make
# guest-collector, uploader/collector/Kbuild): mbedtls' default configuration with pthread
# locking (uploader/collector/mbedtls-config.h). Its own folder; nothing in `all` needs it.
MBEDTLS_SERVER_DIR := $(obj)/mbedtls-server
MBEDTLS_SERVER_INC := $(MBEDTLS_SERVER_DIR)/include
MBEDTLS_SERVER_LIBS := $(patsubst $(MBEDTLS_DIR)/%,$(MBEDTLS_SERVER_DIR)/%,$(MBEDTLS_LIBS))
MBEDTLS_SERVER_CONFIG := $(srctree)/uploader/collector/mbedtls-config.h
MBEDTLS_SERVER_STAMP := $(MBEDTLS_SERVER_DIR)/.built-$(MBEDTLS_DEB_VERSION)

$(MBEDTLS_SERVER_STAMP): board/common/mbedtls.sh board/common/mbedtls.mk \
		board/$(BOARD)/board.mk $(MBEDTLS_SERVER_CONFIG) | $(NEED_DEPS)
	$(call mbedtls_build,$(MBEDTLS_SERVER_DIR),$(MBEDTLS_SERVER_CONFIG), (server side))

$(MBEDTLS_SERVER_LIBS): $(MBEDTLS_SERVER_STAMP)
	@:

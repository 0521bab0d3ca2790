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

MBEDTLS_CFLAGS := -O2 $(BOARD_CFLAGS) -ffunction-sections -fdata-sections

$(MBEDTLS_STAMP): board/common/mbedtls.sh board/common/mbedtls.mk board/$(BOARD)/board.mk | $(NEED_DEPS)
	$(call say,MBEDTLS,$(MBEDTLS_DEB_VERSION) for $(BOARD))
	$(Q)sh board/common/mbedtls.sh "$(DL_DIR)" "$(MBEDTLS_DIR)" "$(MBEDTLS_DEB_VERSION)" \
		"$(MBEDTLS_VERSION)" "$(MBEDTLS_DSC_SHA256)" "$(CC)" "$(CROSS_COMPILE)ar" \
		"$(MBEDTLS_CFLAGS)" $(if $(filter 1,$(V)),,>$(obj)/mbedtls.log 2>&1) \
		|| { echo "mbedtls build failed; see $(O)/mbedtls.log"; exit 1; }
	$(Q)touch $@

$(MBEDTLS_LIBS): $(MBEDTLS_STAMP)
	@:

#!/bin/sh
# Writes the SDK's descriptions for an OEM's build system (docs/oem.md, "Building an app
# with jitt"), for an SDK installed under PREFIX (libjitt*.a in PREFIX/lib/jitt, jitt.h in
# PREFIX/include/jitt):
#   OUT/pkgconfig/jitt.pc       a program on glibc, built by GLIBC_CC (PIE or not)
#   OUT/pkgconfig/jitt-musl.pc  a program on musl, built by MUSL_CC (static)
#   OUT/pkgconfig/jitt-dso.pc   an instrumented shared library (any libc)
#   OUT/pkgconfig/jitt-sampled.pc  jitt.pc with sampled time (JITT_SDK_SAMPLED=1: x86_64)
#   OUT/pkgconfig/jitt-sleds.pc  a program on glibc whose trace points are patched in at
#                               start-up (JITT_SDK_SLEDS: its compile flags; x86_64)
#   OUT/pkgconfig/jitt-clang.pc a program on glibc built by CLANG_CC, with trace points
#                               only where clang kept a function after inlining (when the
#                               build made the clang flavour: CLANG_CC given)
#   OUT/cmake/jitt/jittConfig.cmake and jittConfigVersion.cmake: the same as CMake targets
#     jitt::jitt, jitt::musl and jitt::dso (and jitt::clang with CLANG_CC)
# Each names, in its variable `compiler`, the compiler its flags are for: libjitt's archives
# carry its LTO bytecode (GCC's, or clang's for jitt-clang.pc), so the program is compiled
# and linked by that compiler with -flto.
# The flags themselves come from the build (libjitt.cflags, libjitt*.ldflags), so the files
# and the archives never disagree. The CMake files find the prefix from their own place,
# so an SDK copied elsewhere (a sysroot) still works; pkg-config does with --define-prefix.
#
# usage: sdk-files.sh OUT PREFIX VERSION GLIBC_CC MUSL_CC CFLAGS_FILE GLIBC_LDFLAGS_FILE
#                     MUSL_LDFLAGS_FILE [CLANG_CC CLANG_CFLAGS_FILE CLANG_LDFLAGS_FILE]
set -eu
out=$1 prefix=$2 version=$3 glibc_cc=$4 musl_cc=$5
cflags=$(cat "$6")
glibc_ld=$(cat "$7")
musl_ld=$(cat "$8")
clang_cc=${9:-} clang_cflags= clang_ld=
if [ -n "$clang_cc" ]; then
	clang_cflags=$(cat "${10}")
	clang_ld=$(cat "${11}")
fi
mkdir -p "$out/pkgconfig" "$out/cmake/jitt"

pc() { # name libc compiler archive ldflags cflags [link-options: -flto unless given]
	cat <<PC
# jitt's runtime for an instrumented program on $2 (docs/oem.md). Compile only the
# program's own sources with \`pkg-config --cflags\` (not its tools), link it with
# \`pkg-config --libs\`, both by \${compiler} with LTO (the archive is its LTO bytecode).
prefix=$prefix
libdir=\${prefix}/lib/jitt
includedir=\${prefix}/include
compiler=$3
libc=$2

Name: $1
Description: jitt, a function-tracing flight recorder: the runtime an app links ($2)
Version: $version
Cflags: -I\${includedir} $6
Libs: ${7--flto }\${libdir}/$4 $5
PC
}
pc jitt glibc "$glibc_cc" libjitt-glibc.a "$glibc_ld" "$cflags" >"$out/pkgconfig/jitt.pc"
pc jitt-musl musl "$musl_cc" libjitt.a "$musl_ld -static" "$cflags" >"$out/pkgconfig/jitt-musl.pc"
if [ -n "$clang_cc" ]; then
	pc jitt-clang glibc "$clang_cc" libjitt-clang.a "$clang_ld" "$clang_cflags" \
		>"$out/pkgconfig/jitt-clang.pc"
fi
# Sampled time (install.sh sets JITT_SDK_SAMPLED where the board built libjitt-sampled.a):
# jitt.pc's program with hooks that read the timer for about one record in 32. pkg-config
# puts a package's Libs before those of what it requires, so these hooks come before
# libjitt's and are the ones the linker takes.
if [ "${JITT_SDK_SAMPLED:-}" = 1 ]; then
	cat >"$out/pkgconfig/jitt-sampled.pc" <<PC
# jitt for a call-heavy program on glibc, x86_64 (docs/untimed.md): as jitt.pc, but about
# one record in 32 is timed and the others' times are estimated by the decoder.
prefix=$prefix
libdir=\${prefix}/lib/jitt
compiler=$glibc_cc

Name: jitt-sampled
Description: jitt with sampled time: the timer read for about one record in 32
Version: $version
Requires: jitt
Libs: \${libdir}/libjitt-sampled.a
PC
fi
# Sleds (install.sh sets JITT_SDK_SLEDS to their compile flags where the board built
# libjitt-sleds.a): jitt.pc's program, compiled with five NOPs at the entry of each function
# GCC kept out of line instead of -finstrument-functions' hooks, and without -flto (the
# program's own inlining); the runtime patches them at start-up (ringbuf/sleds.h). Its
# link has no -flto either: GCC's linker plugin compiles libjitt's archive from its LTO
# bytecode all the same, and a program built by one command (duktape's Makefile.cmdline:
# CFLAGS and the libs on one gcc line) was compiled with -flto by it, unlike its plain
# build, and partitioned together with the runtime's code. -u pulls the
# patcher, which the runtime only names weakly, and JITT_SDK_SLEDS_LDFLAGS sends the C
# library's hot functions through sleds of their own (ringbuf/sleds_libc.c).
if [ -n "${JITT_SDK_SLEDS:-}" ]; then
	pc jitt-sleds glibc "$glibc_cc" "libjitt-sleds.a \${libdir}/libjitt-glibc.a" \
		"$glibc_ld ${JITT_SDK_SLEDS_LDFLAGS:--Wl,-u,rb_sleds_patch}" "$JITT_SDK_SLEDS" "" \
		>"$out/pkgconfig/jitt-sleds.pc"
fi
cat >"$out/pkgconfig/jitt-dso.pc" <<PC
# jitt's hooks for an instrumented shared library (docs/oem.md): its functions are traced
# when the program that loads it links jitt (jitt.pc, jitt-musl.pc or jitt-clang.pc), and
# run untraced otherwise. Any C compiler and libc; no LTO needed.
prefix=$prefix
libdir=\${prefix}/lib/jitt
includedir=\${prefix}/include

Name: jitt-dso
Description: jitt's trace hooks for an instrumented shared library
Version: $version
Cflags: -finstrument-functions
Libs: \${libdir}/libjitt-dso.a
PC

list() { echo "$*" | tr -s ' ' ';'; } # words to a CMake list
cat >"$out/cmake/jitt/jittConfig.cmake" <<CMAKE
# jitt's SDK for CMake (docs/oem.md):
#   find_package(jitt REQUIRED)
#   target_link_libraries(myservice PRIVATE jitt::jitt)  # glibc; jitt::musl: static musl
#   target_link_libraries(mylib PRIVATE jitt::dso)       # an instrumented shared library
# Link jitt only to the program you trace, not to every target of the tree: its compile
# options instrument the target's sources. The archives are GCC LTO bytecode: build with
# the compiler JITT_COMPILER names (JITT_MUSL_COMPILER for jitt::musl); where the SDK has
# the clang flavour, jitt::clang is for a program built by JITT_CLANG_COMPILER.
get_filename_component(_jitt_prefix "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(JITT_VERSION "$version")
set(JITT_COMPILER "$glibc_cc")
set(JITT_MUSL_COMPILER "$musl_cc")
set(JITT_CLANG_COMPILER "$clang_cc")
if(CMAKE_C_COMPILER_ID AND NOT CMAKE_C_COMPILER_ID STREQUAL "GNU")
  if(CMAKE_C_COMPILER_ID STREQUAL "Clang" AND JITT_CLANG_COMPILER)
    message(STATUS "jitt: with clang, link jitt::clang (\${JITT_CLANG_COMPILER}, lld)")
  else()
    message(WARNING "jitt: libjitt is GCC LTO bytecode; \${CMAKE_C_COMPILER_ID} cannot link it")
  endif()
endif()
if(JITT_CLANG_COMPILER AND NOT TARGET jitt::clang)
  add_library(jitt::clang INTERFACE IMPORTED)
  set_target_properties(jitt::clang PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "\${_jitt_prefix}/include"
    INTERFACE_COMPILE_OPTIONS "$(list "$clang_cflags")"
    INTERFACE_LINK_OPTIONS "-flto;$(list "$clang_ld")"
    INTERFACE_LINK_LIBRARIES "\${_jitt_prefix}/lib/jitt/libjitt-clang.a")
endif()
foreach(_jitt_t jitt musl)
  if(NOT TARGET jitt::\${_jitt_t})
    add_library(jitt::\${_jitt_t} INTERFACE IMPORTED)
    set_target_properties(jitt::\${_jitt_t} PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "\${_jitt_prefix}/include"
      INTERFACE_COMPILE_OPTIONS "$(list "$cflags")")
  endif()
endforeach()
set_target_properties(jitt::jitt PROPERTIES
  INTERFACE_LINK_OPTIONS "-flto;$(list "$glibc_ld")"
  INTERFACE_LINK_LIBRARIES "\${_jitt_prefix}/lib/jitt/libjitt-glibc.a")
set_target_properties(jitt::musl PROPERTIES
  INTERFACE_LINK_OPTIONS "-flto;-static;$(list "$musl_ld")"
  INTERFACE_LINK_LIBRARIES "\${_jitt_prefix}/lib/jitt/libjitt.a")
if(NOT TARGET jitt::dso)
  add_library(jitt::dso INTERFACE IMPORTED)
  set_target_properties(jitt::dso PROPERTIES
    INTERFACE_COMPILE_OPTIONS "-finstrument-functions"
    INTERFACE_LINK_LIBRARIES "\${_jitt_prefix}/lib/jitt/libjitt-dso.a")
endif()
unset(_jitt_prefix)
unset(_jitt_t)
CMAKE
cat >"$out/cmake/jitt/jittConfigVersion.cmake" <<CMAKE
# find_package(jitt X.Y): the same major version, at least X.Y.
set(PACKAGE_VERSION "$version")
string(REGEX MATCH "^[0-9]+" _jitt_major "\${PACKAGE_VERSION}")
string(REGEX MATCH "^[0-9]+" _jitt_want "\${PACKAGE_FIND_VERSION}")
if(PACKAGE_FIND_VERSION AND (PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION
                             OR NOT _jitt_major STREQUAL _jitt_want))
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
CMAKE

#!/usr/bin/env bash
# Build llama-cpp-python once for a fixed CPU baseline, cache the wheel, print its path.
#   scripts/llamacpp_wheel.sh PYTHON
#
# Why not pip's own build: it compiles with -march=native (GGML_NATIVE), so the library is tied to
# the build host's instruction set. Built natively on an AVX-512 machine with avx512_bf16, 0.3.36
# segfaults on the first chat request and returns non-language from plain completion; a native
# build copied to an older CPU dies of SIGILL. And pip's wheel cache is keyed by the source
# archive, not by the flags, so a cached native wheel would come back whatever CMAKE_ARGS says.
#
# The baseline here is x86-64-v3 (AVX2, FMA, F16C, BMI2; no AVX-512), which every x86-64 CPU
# since Haswell (2013) and Zen 1 (2017) has: the same wheel is correct on AVX2-only and AVX-512
# machines. A host without AVX2 gets an SSE4.2 build (its own cache key). Other architectures
# build with ggml's portable defaults (GGML_NATIVE=OFF). The wheel is cached under
# ${KGQA_CACHE_DIR:-~/.cache/kgqa}/wheels/<version>-<flags hash>/ (the compile takes ~10 min on
# 2 cores, once per machine and flag set).
set -euo pipefail
python="${1:?usage: llamacpp_wheel.sh PYTHON}"
version=0.3.36
case "$(uname -m)" in
    x86_64)
        if grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
            flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AVX_VNNI=OFF"
        else
            flags="-DGGML_NATIVE=OFF -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_BMI2=OFF -DGGML_AVX512=OFF"
        fi
        ;;
    *) flags="-DGGML_NATIVE=OFF" ;;
esac
key="$(printf '%s %s %s' "$version" "$(uname -m)" "$flags" | sha256sum | cut -c1-12)"
dir="${KGQA_CACHE_DIR:-$HOME/.cache/kgqa}/wheels/llama-cpp-python-$version-$key"
wheel="$(ls "$dir"/llama_cpp_python-"$version"-*.whl 2>/dev/null | head -n 1 || true)"
if [ -z "$wheel" ]; then
    mkdir -p "$dir"
    echo "llamacpp_wheel: compiling llama-cpp-python $version ($flags), ~10 min on 2 cores" >&2
    CMAKE_ARGS="$flags" "$python" -m pip wheel -q --no-deps --no-cache-dir \
        --no-binary llama-cpp-python "llama-cpp-python==$version" -w "$dir.tmp" >&2
    mv "$dir.tmp"/llama_cpp_python-"$version"-*.whl "$dir"/
    rm -rf "$dir.tmp"
    printf '%s\n' "$flags" >"$dir/FLAGS"
    wheel="$(ls "$dir"/llama_cpp_python-"$version"-*.whl | head -n 1)"
fi
printf '%s\n' "$wheel"

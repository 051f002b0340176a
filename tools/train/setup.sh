#!/usr/bin/env bash
# What training Quire's reader needs beyond the build (installer/setup-deps.sh): Debian's PyTorch
# with OpenBLAS (with Debian's reference BLAS its matrix products ran ~20x slower here), the text
# sources (the KJV Bible through bible-kjv, Chinese fortunes and poems, German quotations in
# fortunes-de, Unihan's character frequencies in unicode-data), German hyphenation patterns, and the
# fonts the page generator renders with (its Fraktur face is in tools/train/fonts/). Idempotent.
set -euo pipefail
PACKAGES=(python3-torch libopenblas0-pthread python3-numpy python3-pil python3-pyphen hyphen-de
  bible-kjv bible-kjv-text fortunes-zh fortunes-de unicode-data
  fonts-dejavu-core fonts-liberation2 fonts-urw-base35 fonts-ebgaramond fonts-linuxlibertine fonts-sil-gentium
  fonts-noto-cjk)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "train setup: ${#PACKAGES[@]} packages present"

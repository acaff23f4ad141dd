# Sourced by the scripts: points tests at the tools scripts/install-brokers put in .tools/.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export STRAIT_TANSU_BIN="${STRAIT_TANSU_BIN:-$root/.tools/tansu/tansu}"
export STRAIT_PYTHON="${STRAIT_PYTHON:-$root/.tools/venv/bin/python}"

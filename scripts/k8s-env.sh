#!/usr/bin/env bash
# Real Kubernetes control plane for integration tests: kube-apiserver and
# kube-controller-manager v1.20.2, built from Debian's `kubernetes` source
# package, plus etcd from apt. Everything is cached OUTSIDE the repo.
#
# usage:
#   scripts/k8s-env.sh build   # idempotent; cold ~7 min on 2 cores, warm: seconds
#   scripts/k8s-env.sh path    # print the bin dir (does not build)
#   scripts/k8s-env.sh status  # print what is there / missing, exit 1 if incomplete
#   scripts/k8s-env.sh clean   # remove the cached build
#
# env:
#   CERTMGR_NOTIFY_CACHE  cache root (default: $HOME/.cache/certmgr-notify)
#
# Layout: $CACHE/k8s-v1.20.2/
#   bin/kube-apiserver, bin/kube-controller-manager
#   .complete      stamp written only after both binaries are built and verified
#   build.log      full log of the last build
#   work/          scratch (apt source lists, debs, source tree); deleted after success
set -euo pipefail

K8S_VERSION=v1.20.2
CACHE_ROOT=${CERTMGR_NOTIFY_CACHE:-${HOME:-/root}/.cache/certmgr-notify}
DIR=$CACHE_ROOT/k8s-$K8S_VERSION
BIN=$DIR/bin
STAMP=$DIR/.complete
LOG=$DIR/build.log
BINARIES=(kube-apiserver kube-controller-manager)

log() { printf '[k8s-env] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo -n "$@"
  else die "need root (or passwordless sudo) to run: $*"
  fi
}

apt_updated=0
apt_install() {
  # apt_install PKG... : installs only what is missing
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if [ $apt_updated = 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

ensure_runtime_deps() {
  # What starting the env needs even when the binaries are cached
  # (a fresh CI image may have the cache restored but no etcd).
  command -v etcd >/dev/null 2>&1 || apt_install etcd-server
  command -v etcdctl >/dev/null 2>&1 || apt_install etcd-client
  command -v openssl >/dev/null 2>&1 || apt_install openssl
  command -v etcd >/dev/null 2>&1 || die "etcd still not on PATH after installing etcd-server"
}

binaries_ok() {
  [ -f "$STAMP" ] || return 1
  local b
  for b in "${BINARIES[@]}"; do [ -x "$BIN/$b" ] || return 1; done
  "$BIN/kube-apiserver" --version 2>/dev/null | grep -q "Kubernetes $K8S_VERSION"
}

print_where() {
  echo "K8S_BIN_DIR=$BIN"
  echo "KUBE_APISERVER=$BIN/kube-apiserver"
  echo "KUBE_CONTROLLER_MANAGER=$BIN/kube-controller-manager"
  echo "ETCD=$(command -v etcd || echo MISSING)"
  echo "ETCDCTL=$(command -v etcdctl || echo MISSING)"
}

do_build() {
  local W=$DIR/work
  rm -rf "$W"; mkdir -p "$W" "$BIN"
  cd "$W"
  export DEBIAN_FRONTEND=noninteractive
  apt_install golang-go etcd-server etcd-client rsync jq make dpkg-dev openssl ca-certificates

  # deb-src entries derived from the machine's own apt sources, kept private to $W
  mkdir -p apt/parts apt/lists/partial apt/cache/archives/partial
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources > apt/parts/src.sources
  elif [ -f /etc/apt/sources.list ]; then
    grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' > apt/parts/src.list
  else
    die "no apt sources found to derive deb-src entries from"
  fi
  local APTO=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$W/apt/parts"
              -o Dir::State::Lists="$W/apt/lists" -o Dir::Cache="$W/apt/cache")
  log "fetching Debian source package 'kubernetes'"
  apt-get "${APTO[@]}" update -qq
  rm -rf src && mkdir src && cd src
  apt-get "${APTO[@]}" source -qq kubernetes
  cd "$(find . -maxdepth 1 -type d -name 'kubernetes-*' | head -1)"
  local SRC=$PWD

  # Fix: vendored reflect2 1.0.1 segfaults under Go >= 1.18 (mapiterinit) ->
  # Debian's reflect2 1.0.2 + json-iterator 1.1.12.
  log "replacing vendored reflect2/json-iterator"
  mkdir -p ../debs
  (cd ../debs && apt-get download -qq golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev \
     && for d in *.deb; do dpkg-deb -x "$d" x; done)
  local G=../debs/x/usr/share/gocode/src/github.com
  rm -f vendor/github.com/modern-go/reflect2/*.go vendor/github.com/modern-go/reflect2/*.s vendor/github.com/json-iterator/go/*.go
  cp $G/modern-go/reflect2/*.go $G/modern-go/reflect2/*.s vendor/github.com/modern-go/reflect2/
  cp $G/json-iterator/go/*.go vendor/github.com/json-iterator/go/
  rm -f vendor/github.com/modern-go/reflect2/*_test.go vendor/github.com/json-iterator/go/*_test.go

  # build like debian/rules (GOPATH mode via the repo's make); no .git, so pin the version
  log "building ${BINARIES[*]} (cold: ~7 min on 2 cores)"
  (
    export GOPATH=$SRC/.go CGO_ENABLED=0 HOME=$W/home KUBE_GIT_VERSION=$K8S_VERSION KUBE_GIT_TREE_STATE=clean
    unset GOFLAGS
    mkdir -p .go/src/k8s.io "$HOME"
    [ -L .go/src/k8s.io/kubernetes ] || ln -s ../../.. .go/src/k8s.io/kubernetes
    make WHAT="cmd/kube-apiserver cmd/kube-controller-manager"
  )
  local b
  for b in "${BINARIES[@]}"; do
    install -m 0755 "_output/bin/$b" "$BIN/$b.tmp" && mv -f "$BIN/$b.tmp" "$BIN/$b"
  done
  "$BIN/kube-apiserver" --version | grep -q "Kubernetes $K8S_VERSION" || die "built kube-apiserver reports wrong version"
  cd "$DIR"
  log "removing source tree (~2 GB)"
  rm -rf "$W"
  date -u +%FT%TZ > "$STAMP"
}

cmd_build() {
  mkdir -p "$DIR"
  # one build at a time (parallel test workers / CI steps)
  exec 9>"$DIR/.lock"
  if command -v flock >/dev/null 2>&1; then
    flock -n 9 || { log "another build holds $DIR/.lock; waiting"; flock 9; }
  fi
  if binaries_ok; then
    ensure_runtime_deps
    log "cached: $BIN ($(cat "$STAMP"))"
    print_where
    return 0
  fi
  rm -f "$STAMP"
  log "building Kubernetes $K8S_VERSION into $DIR (log: $LOG)"
  local t0=$SECONDS
  if ! ( do_build ) >"$LOG" 2>&1; then
    log "build FAILED; last lines of $LOG:"
    tail -n 40 "$LOG" >&2
    exit 1
  fi
  ensure_runtime_deps
  log "build done in $((SECONDS - t0))s"
  print_where
}

cmd_status() {
  local ok=0
  if binaries_ok; then echo "binaries: ok ($BIN, built $(cat "$STAMP"))"; else echo "binaries: MISSING ($BIN)"; ok=1; fi
  command -v etcd >/dev/null 2>&1 && echo "etcd: $(command -v etcd)" || { echo "etcd: MISSING"; ok=1; }
  command -v etcdctl >/dev/null 2>&1 && echo "etcdctl: $(command -v etcdctl)" || { echo "etcdctl: MISSING"; ok=1; }
  return $ok
}

case "${1:-build}" in
  build) cmd_build ;;
  path) echo "$BIN" ;;
  status) cmd_status ;;
  clean) rm -rf "$DIR"; log "removed $DIR" ;;
  -h|--help|help) sed -n '2,20p' "$0" ;;
  *) die "unknown command '$1' (build|path|status|clean)" ;;
esac

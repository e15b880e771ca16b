#!/usr/bin/env bash
# End-to-end check of the container image on a throwaway kind cluster, for machines with Docker (CI here has no
# Docker engine and does not run it; test/image/image.int.test.ts covers what can be proven without one).
#
#   bash scripts/e2e-kind.sh            needs docker, kind, kubectl, helm on PATH and network access
#
# Steps: kind cluster -> cert-manager (pinned release manifest) -> docker build + kind load -> helm install of
# charts/certmgr-notify (read-only root filesystem, the chart's defaults) -> a receiver pod -> kubectl apply -f
# examples/ with the webhook provider pointed at the receiver -> a broken CA Issuer (its Secret does not exist)
# in namespace payments -> waits until the receiver got the issuer's .notready notification (router
# issuers-unhealthy-in-payments of examples/03-routers.yaml). The cluster is deleted on exit (KEEP_CLUSTER=1 keeps it).
#
# Environment: CLUSTER (default certmgr-notify-e2e), CERT_MANAGER_VERSION (default v1.19.1), TIMEOUT seconds for
# the notification (default 240), KEEP_CLUSTER=1.
set -euo pipefail

cd "$(dirname "$0")/.."
CLUSTER=${CLUSTER:-certmgr-notify-e2e}
CERT_MANAGER_VERSION=${CERT_MANAGER_VERSION:-v1.19.1}
TIMEOUT=${TIMEOUT:-240}
IMAGE=certmgr-notify:e2e
NS=certmgr-notify
RECEIVER_NS=e2e-receiver
RECEIVER_URL="http://receiver.${RECEIVER_NS}.svc.cluster.local:8080/hook"

log() { printf '[e2e-kind %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() {
  log "FAIL: $*"
  exit 1
}

for tool in docker kind kubectl helm; do
  command -v "$tool" >/dev/null || die "$tool is not on PATH (this script is for machines with Docker, kind, kubectl and helm)"
done

cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    log "diagnostics (exit $rc)"
    kubectl --context "kind-${CLUSTER}" -n "$NS" logs deploy/certmgr-notify --tail=200 2>/dev/null || true
    kubectl --context "kind-${CLUSTER}" -n "$RECEIVER_NS" logs deploy/receiver --tail=50 2>/dev/null || true
    kubectl --context "kind-${CLUSTER}" get issuers -A 2>/dev/null || true
  fi
  if [ "${KEEP_CLUSTER:-0}" = "1" ]; then
    log "keeping cluster ${CLUSTER} (kind delete cluster --name ${CLUSTER})"
  else
    kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
  fi
  exit "$rc"
}
trap cleanup EXIT

log "kind cluster ${CLUSTER}"
kind create cluster --name "$CLUSTER" --wait 120s
kc() { kubectl --context "kind-${CLUSTER}" "$@"; }

log "cert-manager ${CERT_MANAGER_VERSION} (release manifest)"
kc apply -f "https://github.com/cert-manager/cert-manager/releases/download/${CERT_MANAGER_VERSION}/cert-manager.yaml" >/dev/null
kc -n cert-manager wait --for=condition=Available deployment --all --timeout=300s

log "docker build + kind load (${IMAGE})"
docker build -t "$IMAGE" --build-arg "REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)" .
kind load docker-image "$IMAGE" --name "$CLUSTER"

log "receiver (the same image, node's http server printing what it receives)"
kc create namespace "$RECEIVER_NS" >/dev/null
kc apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: { name: receiver, namespace: ${RECEIVER_NS} }
spec:
  selector: { matchLabels: { app: receiver } }
  template:
    metadata: { labels: { app: receiver } }
    spec:
      securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: RuntimeDefault } }
      containers:
        - name: receiver
          image: ${IMAGE}
          imagePullPolicy: Never
          command: ["node", "-e"]
          args:
            - >-
              require('http').createServer((q, s) => { let b = ''; q.on('data', (c) => (b += c));
              q.on('end', () => { console.log('RECEIVED ' + q.method + ' ' + q.url + ' ' + b); s.writeHead(204); s.end(); });
              }).listen(8080)
          ports: [{ containerPort: 8080 }]
          securityContext:
            { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: [ALL] } }
---
apiVersion: v1
kind: Service
metadata: { name: receiver, namespace: ${RECEIVER_NS} }
spec:
  selector: { app: receiver }
  ports: [{ port: 8080, targetPort: 8080 }]
EOF
kc -n "$RECEIVER_NS" rollout status deploy/receiver --timeout=120s

log "helm install charts/certmgr-notify (read-only root filesystem)"
# the receiver is a cluster-internal address: the egress deny-list refuses private destinations unless allowed
helm --kube-context "kind-${CLUSTER}" install certmgr-notify charts/certmgr-notify \
  --namespace "$NS" --create-namespace \
  --set image.repository=certmgr-notify --set image.tag=e2e --set image.pullPolicy=Never \
  --set health.gracePeriodMs=10000 --set health.unknownGracePeriodMs=10000 \
  --set "extraEnv[0].name=CERTMGR_NOTIFY_EGRESS_ALLOW" --set "extraEnv[0].value=receiver.${RECEIVER_NS}.svc.cluster.local" \
  --wait --timeout 300s
ro=$(kc -n "$NS" get deploy certmgr-notify -o jsonpath='{.spec.template.spec.containers[0].securityContext.readOnlyRootFilesystem}')
[ "$ro" = "true" ] || die "the chart did not set readOnlyRootFilesystem (got '${ro}')"

log "examples/ (webhook provider pointed at the receiver)"
kc apply -f examples/00-namespace.yaml >/dev/null
kc apply -f examples/ >/dev/null
kc -n cert-alerts create secret generic webhook --from-literal="url=${RECEIVER_URL}" \
  --from-literal='signingSecret=whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=' \
  --dry-run=client -o yaml | kc apply -f - >/dev/null

log "a broken issuer: CA issuer payments/broken-ca whose Secret does not exist"
kc create namespace payments >/dev/null
broken_issuer='apiVersion: cert-manager.io/v1
kind: Issuer
metadata: { name: broken-ca, namespace: payments }
spec:
  ca: { secretName: does-not-exist }'
# cert-manager's webhook can refuse for a few seconds after its Deployment is Available
for attempt in 1 2 3 4 5 6 7 8 9 10; do
  if printf '%s\n' "$broken_issuer" | kc apply -f - >/dev/null; then break; fi
  [ "$attempt" -lt 10 ] || die "cert-manager did not accept the Issuer"
  sleep 6
done

log "waiting up to ${TIMEOUT}s for the notification at the receiver"
deadline=$(($(date +%s) + TIMEOUT))
until kc -n "$RECEIVER_NS" logs deploy/receiver 2>/dev/null | grep 'RECEIVED POST /hook' | grep 'broken-ca' | grep -q 'notready'; do
  [ "$(date +%s)" -lt "$deadline" ] || die "no .notready notification for payments/broken-ca reached the receiver in ${TIMEOUT}s"
  sleep 5
done
kc -n "$RECEIVER_NS" logs deploy/receiver | grep 'RECEIVED POST /hook' | grep 'broken-ca' | head -1
log "PASS: the issuer's .notready notification arrived"

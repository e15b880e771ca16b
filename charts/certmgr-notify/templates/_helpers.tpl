{{- define "certmgr-notify.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "certmgr-notify.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "certmgr-notify.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "certmgr-notify.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "certmgr-notify.selectorLabels" -}}
app.kubernetes.io/name: {{ include "certmgr-notify.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "certmgr-notify.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "certmgr-notify.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "certmgr-notify.secretKeySecret" -}}
{{- default (printf "%s-secret-keys" (include "certmgr-notify.fullname" .)) .Values.secretKey.existingSecret }}
{{- end }}

{{- define "certmgr-notify.apiKeySecret" -}}
{{- default (printf "%s-api-key" (include "certmgr-notify.fullname" .)) .Values.apiKey.existingSecret }}
{{- end }}

{{- /* "true" when /data is a PersistentVolumeClaim: persistence.enabled if set, else on for a SQLite file store
(the store and its outbox must survive a pod restart); never in agent mode (no store). */}}
{{- define "certmgr-notify.persistence" -}}
{{- if eq .Values.mode "agent" }}
{{- else if kindIs "bool" .Values.persistence.enabled }}
{{- if .Values.persistence.enabled }}true{{ end }}
{{- else if and (hasPrefix "sqlite:" .Values.store.url) (not (hasPrefix "sqlite::memory:" .Values.store.url)) (not .Values.store.existingSecret) }}true
{{- end }}
{{- end }}

{{- /* CERTMGR_NOTIFY_KUBE of the serve modes: standalone takes `kube`; a hub needs Kubernetes only for its operator. */}}
{{- define "certmgr-notify.kube" -}}
{{- if eq .Values.mode "hub" }}{{ ternary "on" "off" .Values.hub.operator }}{{ else }}{{ .Values.kube }}{{ end }}
{{- end }}

{{- /* "true" when the serve modes run the emitter (RBAC on cert-manager, namespaces and state ConfigMaps). */}}
{{- define "certmgr-notify.emitter" -}}
{{- if eq .Values.mode "hub" }}{{ if .Values.hub.emitter }}true{{ end }}{{ else }}true{{ end }}
{{- end }}

{{- /* The emitter's settings shared by every mode: cluster name and id. */}}
{{- define "certmgr-notify.emitterEnv" -}}
{{- with .Values.clusterName }}
- name: CERTMGR_NOTIFY_CLUSTER_NAME
  value: {{ . | quote }}
{{- end }}
{{- with .Values.clusterId }}
- name: CERTMGR_NOTIFY_CLUSTER_ID
  value: {{ . | quote }}
{{- end }}
{{- end }}

{{- /* The agent's grace periods (health, only those set): its flags. Serve takes them in its limits file. */}}
{{- define "certmgr-notify.agentHealthEnv" -}}
{{- $h := .Values.health | default dict }}
{{- with $h.gracePeriod }}
- name: CERTMGR_NOTIFY_HEALTH_GRACE_PERIOD
  value: {{ . | quote }}
{{- end }}
{{- with $h.unknownGracePeriod }}
- name: CERTMGR_NOTIFY_HEALTH_UNKNOWN_GRACE_PERIOD
  value: {{ . | quote }}
{{- end }}
{{- with $h.issuingGracePeriod }}
- name: CERTMGR_NOTIFY_HEALTH_ISSUING_GRACE_PERIOD
  value: {{ . | quote }}
{{- end }}
{{- with $h.renewalOverdueGrace }}
- name: CERTMGR_NOTIFY_HEALTH_RENEWAL_OVERDUE_GRACE
  value: {{ . | quote }}
{{- end }}
{{- end }}

{{- /* serve's limits file (YAML): the limits value, plus the health grace periods under their keys. */}}
{{- define "certmgr-notify.limits" -}}
{{- $l := deepCopy (.Values.limits | default dict) }}
{{- $h := .Values.health | default dict }}
{{- range $value, $key := dict "gracePeriod" "healthGracePeriod" "unknownGracePeriod" "healthUnknownGracePeriod" "issuingGracePeriod" "healthIssuingGracePeriod" "renewalOverdueGrace" "healthRenewalOverdueGrace" }}
{{- with index $h $value }}{{ $_ := set $l $key . }}{{ end }}
{{- end }}
{{- toYaml $l }}
{{- end }}

{{- /*
The emitter's served-truth reads (docs/serving.md): Ingresses and Gateways, the endpoints of TLS Secrets (get: a
relist after an apiserver restart reads the changed Ingresses one by one); pods, listed on demand to name the
workloads that mount a Secret whose endpoint serves another certificate. Where the Gateway API is not installed,
the Gateway rule grants nothing.
*/}}
{{- define "certmgr-notify.servingRules" }}
  # served truth (docs/serving.md): the Ingresses and Gateways that serve TLS Secrets, never written
  - apiGroups: ["networking.k8s.io"]
    resources: ["ingresses"]
    verbs: ["get", "list", "watch"]
  - apiGroups: ["gateway.networking.k8s.io"]
    resources: ["gateways"]
    verbs: ["list", "watch"]
  # the reload hint: pods that mount a Secret, listed on demand (never watched, never changed)
  - apiGroups: [""]
    resources: ["pods"]
    verbs: ["list"]
{{- end }}

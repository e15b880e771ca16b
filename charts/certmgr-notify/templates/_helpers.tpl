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

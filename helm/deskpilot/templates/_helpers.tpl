{{- define "deskpilot.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "deskpilot.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "deskpilot.labels" -}}
{{ include "deskpilot.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The Secret the chart keeps provider keys and the database URL in, when given as values. */}}
{{- define "deskpilot.secretName" -}}
{{ include "deskpilot.fullname" . }}
{{- end -}}

{{- define "deskpilot.check" -}}
{{- if and .Values.database.url .Values.database.existingSecret -}}
{{- fail "database: set url or existingSecret, not both" -}}
{{- end -}}
{{- if and .Values.auth.token .Values.auth.existingSecret -}}
{{- fail "auth: set token or existingSecret, not both" -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding the token and its key: the user's, or the chart's own (auth-secret.yaml). */}}
{{- define "deskpilot.authSecretName" -}}
{{- .Values.auth.existingSecret | default (printf "%s-auth" (include "deskpilot.fullname" .)) -}}
{{- end -}}

{{- define "deskpilot.authSecretKey" -}}
{{- if .Values.auth.existingSecret }}{{ .Values.auth.existingSecretKey }}{{ else }}DESKPILOT_TOKEN{{ end -}}
{{- end -}}

{{- define "deskpilot.ownSecret" -}}
{{- if or .Values.llm.apiKeys .Values.database.url }}true{{ end -}}
{{- end -}}

{{/* Names clients may put in the Host header: the Service's, the ingress host, and the listed ones
(allowedHosts, and mcpAllowedHosts, its deprecated name). */}}
{{- define "deskpilot.allowedHosts" -}}
{{- $svc := include "deskpilot.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- $hosts := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) -}}
{{- if .Values.ingress.enabled }}{{ $hosts = append $hosts .Values.ingress.host }}{{ end -}}
{{- join "," (concat $hosts .Values.allowedHosts (.Values.mcpAllowedHosts | default list)) -}}
{{- end -}}

{{- define "deskpilot.claim" -}}
{{- $p := index .root.Values.persistence .name -}}
{{- $p.existingClaim | default (printf "%s-%s" (include "deskpilot.fullname" .root) .name) -}}
{{- end -}}

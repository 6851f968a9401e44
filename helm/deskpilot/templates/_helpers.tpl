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
{{- if and .Values.postgresql.enabled (or .Values.database.url .Values.database.existingSecret) -}}
{{- fail "database: postgresql.enabled runs one for the release; with it, leave database.url and existingSecret empty" -}}
{{- end -}}
{{- if and (include "deskpilot.fleet" .) (not (include "deskpilot.databaseSecret" .)) -}}
{{- fail "a fleet (desktops.replicas > 1 or autoscaling) shares one queue on PostgreSQL: set database.url, database.existingSecret or postgresql.enabled" -}}
{{- end -}}
{{- if not (has .Values.desktops.autoscaling.trigger (list "postgresql" "prometheus")) -}}
{{- fail "desktops.autoscaling.trigger: postgresql (the queue's database) or prometheus (a Prometheus query)" -}}
{{- end -}}
{{- if and .Values.desktops.autoscaling.enabled (eq .Values.desktops.autoscaling.trigger "prometheus") (not .Values.desktops.autoscaling.prometheus.serverAddress) -}}
{{- fail "desktops.autoscaling.trigger prometheus asks a Prometheus: set desktops.autoscaling.prometheus.serverAddress" -}}
{{- end -}}
{{- if and (include "deskpilot.fleet" .) .Values.ingress.mcp -}}
{{- fail "ingress.mcp routes /mcp to the one desktop; in a fleet, MCP clients reach each desktop at its stable name (<release>-desktop-N.<release>-desktops.<namespace>.svc:9990/mcp)" -}}
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

{{/* The fleet: several desktops (a StatefulSet) share one queue on PostgreSQL behind one task API and UI (a
Deployment). Off (one desktop, the default): one pod runs everything. */}}
{{- define "deskpilot.fleet" -}}
{{- if or (gt (int .Values.desktops.replicas) 1) .Values.desktops.autoscaling.enabled }}true{{ end -}}
{{- end -}}

{{- define "deskpilot.desktopsName" -}}
{{ include "deskpilot.fullname" . }}-desktop
{{- end -}}

{{/* The headless Service giving each desktop its stable DNS name: <pod>.<this>.<namespace>.svc. */}}
{{- define "deskpilot.desktopsService" -}}
{{ include "deskpilot.fullname" . }}-desktops
{{- end -}}

{{- define "deskpilot.postgresName" -}}
{{ include "deskpilot.fullname" . }}-postgresql
{{- end -}}

{{/* Where DATABASE_URL comes from: {name, key} of a Secret, or nothing (SQLite). */}}
{{- define "deskpilot.databaseSecret" -}}
{{- if .Values.database.existingSecret -}}
{name: {{ .Values.database.existingSecret }}, key: {{ .Values.database.existingSecretKey }}}
{{- else if .Values.database.url -}}
{name: {{ include "deskpilot.secretName" . }}, key: DATABASE_URL}
{{- else if .Values.postgresql.enabled -}}
{name: {{ include "deskpilot.postgresName" . }}, key: DATABASE_URL}
{{- end -}}
{{- end -}}

{{/* The variables every Deskpilot container reads: the token, the Host allow-list, the model, the database. */}}
{{- define "deskpilot.commonEnv" -}}
# the launcher gives it to the task service and the UI, the desktop service only its digest
- name: DESKPILOT_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "deskpilot.authSecretName" . }}
      key: {{ include "deskpilot.authSecretKey" . }}
{{- with .Values.llm.model }}
- name: AGENT_MODEL
  value: {{ . | quote }}
{{- end }}
{{- with .Values.llm.proxyUrl }}
- name: AGENT_LLM_PROXY_URL
  value: {{ . | quote }}
{{- end }}
{{- with include "deskpilot.databaseSecret" . }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      {{- . | fromYaml | toYaml | nindent 6 }}
{{- end }}
{{- range .Values.extraEnv }}
- name: {{ .name }}
  {{- if hasKey . "value" }}
  value: {{ .value | toString | quote }}  {{- /* 200 or true in values would not be valid env */}}
  {{- else }}
  valueFrom:
    {{- toYaml .valueFrom | nindent 4 }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* Provider keys (and the URL given as a value) from the chart's Secret and the user's. */}}
{{- define "deskpilot.envFrom" -}}
{{- if include "deskpilot.ownSecret" . }}
- secretRef:
    name: {{ include "deskpilot.secretName" . }}
{{- end }}
{{- with .Values.llm.existingSecret }}
- secretRef:
    name: {{ . }}
{{- end }}
{{- end -}}

{{/* Restart the pods when a key, URL or token changes: they read them only at start. */}}
{{- define "deskpilot.checksums" -}}
checksum/secret: {{ include (print $.Template.BasePath "/secret.yaml") . | sha256sum }}
checksum/auth: {{ include (print $.Template.BasePath "/auth-secret.yaml") . | sha256sum }}
{{- end -}}

{{/* The job label of one kind of service's targets ("desktop", "tasks" or "ui": the ServiceMonitors set it to
their own names), and the PromQL selector of this release's series of that kind, for the alerts, the dashboard's
defaults and KEDA's query. Call with (dict "root" $ "kind" "tasks"). */}}
{{- define "deskpilot.metricsJob" -}}
{{ include "deskpilot.fullname" .root }}-{{ .kind }}
{{- end -}}

{{- define "deskpilot.metricsSelector" -}}
namespace="{{ .root.Release.Namespace }}", job="{{ include "deskpilot.metricsJob" . }}"
{{- end -}}

{{/* The appliance's container: a desktop with its agent and UI under supervisord. One pod of it is the whole
release (deployment.yaml), or one desktop of the fleet (desktops.yaml), which adds `env` (its name in the
fleet) and sets `hosts` (the names its services answer to). Call with (dict "root" $ "env" list "hosts" str). */}}
{{- define "deskpilot.appliance" -}}
{{- $ := .root -}}
- name: deskpilot
  image: "{{ $.Values.image.repository }}:{{ $.Values.image.tag | default $.Chart.AppVersion }}"
  imagePullPolicy: {{ $.Values.image.pullPolicy }}
  {{- with $.Values.securityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  ports:
    - name: desktop
      containerPort: 9990
    - name: agent
      containerPort: 9991
    - name: ui
      containerPort: 9992
  env:
    {{- with .env }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
    - name: DESKPILOT_ALLOWED_HOSTS
      value: {{ .hosts | quote }}
    {{- include "deskpilot.commonEnv" $ | nindent 4 }}
  {{- with include "deskpilot.envFrom" $ }}
  envFrom:
    {{- . | nindent 4 }}
  {{- end }}
  # supervisord restarts a program that dies by itself, and the desktop service reconnects to a
  # restarted display: a pod restart would only lose the desktop's state.
  startupProbe:  # the agent is the last to answer: it applies the database migrations first
    httpGet: {path: /health, port: agent}
    periodSeconds: 2
    failureThreshold: 90
  readinessProbe:  # not ready after 30 s of a degraded desktop (display or live view down)
    httpGet: {path: /health, port: desktop}
    periodSeconds: 10
    failureThreshold: 3
  livenessProbe:  # only a service that no longer answers at all is restarted
    httpGet: {path: /health/live, port: desktop}
    periodSeconds: 20
    timeoutSeconds: 5
    failureThreshold: 3
  volumeMounts:
    - name: home
      mountPath: /home/user
    - name: state
      mountPath: /var/lib/deskpilot
    - name: shm
      mountPath: /dev/shm
  {{- with $.Values.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/* What every pod of the release shares: pull secrets, security context, placement on nodes. */}}
{{- define "deskpilot.podCommon" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "deskpilot.shmVolume" -}}
- name: shm
  emptyDir:
    medium: Memory
    sizeLimit: {{ .Values.shmSize }}
{{- end -}}

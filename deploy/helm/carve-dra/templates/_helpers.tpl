{{/* The image of every container. */}}
{{- define "carve.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* Labels of every object; the component's selects its pods. */}}
{{- define "carve.labels" -}}
app.kubernetes.io/name: carve
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end }}

{{- define "carve.selector" -}}
app.kubernetes.io/name: carve
app.kubernetes.io/component: {{ . }}
{{- end }}

{{/* A GPU node pod's placement: node selection, affinity, tolerations, priority, runtime class, pull secrets. */}}
{{- define "carve.nodes" -}}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.runtimeClassName }}
runtimeClassName: {{ . }}
{{- end }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The environment that gives a container the node's GPUs through the NVIDIA Container Toolkit. */}}
{{- define "carve.gpuEnv" -}}
- {name: NVIDIA_VISIBLE_DEVICES, value: all}
- {name: NVIDIA_DRIVER_CAPABILITIES, value: "compute,utility"}
{{- end }}

{{- define "carve.webhookName" -}}carve-dra-webhook{{- end }}

{{/* Labels the DaemonSet and its pods carry (as etc/kubernetes). */}}
{{- define "mokka.labels" -}}
app.kubernetes.io/name: mokka
app.kubernetes.io/component: node-simulator
{{- end -}}

{{/* The profile document: inline, a shipped profile by name, or profile.yaml. */}}
{{- define "mokka.profile" -}}
{{- if .Values.profile.inline -}}
{{- .Values.profile.inline -}}
{{- else if .Values.profile.name -}}
{{- $f := printf "profiles/%s.yaml" .Values.profile.name -}}
{{- $p := .Files.Get $f -}}
{{- if not $p -}}{{- fail (printf "profile.name %q: no %s in the chart" .Values.profile.name $f) -}}{{- end -}}
{{- $p -}}
{{- else -}}
{{- .Files.Get "profile.yaml" -}}
{{- end -}}
{{- end -}}

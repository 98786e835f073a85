{{/* SPDX-License-Identifier: Apache-2.0 */}}
{{/*
Helpers for charts/luaop. Only Go text/template's own constructs and functions (define, template,
if/with/range, eq, printf, and, or, not): no sprig, no include/toYaml, so the chart renders with
any Go template engine (tests/integration/helm_chart.py renders it without helm).
*/}}

{{/* The objects' base name: fullnameOverride, else the release name when it is the chart's name,
else <release>-<chart>. */}}
{{- define "luaop.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{ .Values.fullnameOverride }}
{{- else if eq .Release.Name .Chart.Name -}}
{{ .Release.Name }}
{{- else -}}
{{ printf "%s-%s" .Release.Name .Chart.Name }}
{{- end -}}
{{- end -}}

{{/* Labels are written as one-line YAML flow mappings ({"k": "v", ...}), so a template can put
them at any depth without an indenting function. */}}
{{- define "luaop.selectorLabelPairs" -}}
"app.kubernetes.io/name": {{ printf "%q" .Chart.Name }}, "app.kubernetes.io/instance": {{ printf "%q" .Release.Name }}
{{- end -}}

{{- define "luaop.selectorLabels" -}}
{{ "{" }}{{ template "luaop.selectorLabelPairs" . }}{{ "}" }}
{{- end -}}

{{- define "luaop.labelPairs" -}}
{{ template "luaop.selectorLabelPairs" . }}, "app.kubernetes.io/version": {{ printf "%q" .Chart.AppVersion }},
{{- " " }}"app.kubernetes.io/managed-by": {{ printf "%q" .Release.Service }},
{{- " " }}"helm.sh/chart": {{ printf "%q" (printf "%s-%s" .Chart.Name .Chart.Version) }}
{{- end -}}

{{- define "luaop.labels" -}}
{{ "{" }}{{ template "luaop.labelPairs" . }}{{ "}" }}
{{- end -}}

{{/* The pods' labels: the selector's plus .Values.podLabels. */}}
{{- define "luaop.podLabels" -}}
{{ "{" }}{{ template "luaop.selectorLabelPairs" . }}
{{- range $k, $v := .Values.podLabels }}, {{ printf "%q" $k }}: {{ printf "%q" $v }}{{ end }}{{ "}" }}
{{- end -}}

{{- define "luaop.serviceAccountName" -}}
{{- if .Values.serviceAccount.name -}}
{{ .Values.serviceAccount.name }}
{{- else -}}
{{ template "luaop.fullname" . }}
{{- end -}}
{{- end -}}

{{- define "luaop.webhookCertSecret" -}}
{{- if .Values.webhook.certSecretName -}}
{{ .Values.webhook.certSecretName }}
{{- else -}}
{{ template "luaop.fullname" . }}-webhook-cert
{{- end -}}
{{- end -}}

{{/* A list of strings as a YAML flow sequence of quoted strings: ["a", "b"]. */}}
{{- define "luaop.flowList" -}}
[{{ range $i, $s := . }}{{ if $i }}, {{ end }}{{ printf "%q" $s }}{{ end }}]
{{- end -}}

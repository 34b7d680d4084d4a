{{/* Names and labels shared by the templates. */}}

{{- define "kinference.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* <release>-kinference, or <release> when the release name already contains "kinference". */}}
{{- define "kinference.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kinference.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "kinference.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: include "kinference.selectorLabels" (list . "gateway") */}}
{{- define "kinference.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "kinference.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "kinference.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "kinference.controllerServiceAccount" -}}
{{- default (printf "%s-controller" (include "kinference.fullname" .)) .Values.controller.serviceAccount.name -}}
{{- end -}}

{{- define "kinference.gatewayServiceAccount" -}}
{{- default (printf "%s-gateway" (include "kinference.fullname" .)) .Values.gateway.serviceAccount.name -}}
{{- end -}}

{{/* The watched namespace: watchNamespace, or the release namespace. */}}
{{- define "kinference.watchNamespace" -}}
{{- .Values.watchNamespace | default .Release.Namespace -}}
{{- end -}}

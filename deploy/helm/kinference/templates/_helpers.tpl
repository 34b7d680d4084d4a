{{/* Names and labels shared by the templates. */}}

{{/* "kinference", or nameOverride. */}}
{{- define "kinference.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* fullnameOverride; else <release>-<name>, or <release> when the release name already
contains <name>. Objects are <fullname>-gateway, <fullname>-controller, ... */}}
{{- define "kinference.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "kinference.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
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

{{/* repository@digest when a digest is set, else repository:tag (default appVersion). */}}
{{- define "kinference.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
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

{{/* The gateway's drain grace in seconds: config.drain_timeout_s, else drainTimeoutSeconds. */}}
{{- define "kinference.drainTimeout" -}}
{{- $cfg := .Values.gateway.config | default dict -}}
{{- if hasKey $cfg "drain_timeout_s" -}}{{ get $cfg "drain_timeout_s" }}{{- else -}}{{ .Values.gateway.drainTimeoutSeconds }}{{- end -}}
{{- end -}}

{{/* The gateway's port name for /metrics, /ready, /health and /debug: admin, or http
without an admin port. */}}
{{- define "kinference.gatewayAdminPortName" -}}
{{- if .Values.gateway.adminPort -}}admin{{- else -}}http{{- end -}}
{{- end -}}

{{/* Whether the gateway keeps a SQLite ledger (accounting set, store sqlite or unset). */}}
{{- define "kinference.sqliteLedger" -}}
{{- $cfg := .Values.gateway.config | default dict -}}
{{- if hasKey $cfg "accounting" -}}
{{- $ledger := (get $cfg "accounting" | default dict).ledger | default dict -}}
{{- if eq (default "sqlite" $ledger.store) "sqlite" -}}true{{- end -}}
{{- end -}}
{{- end -}}

{{/* The gateway config file: gateway.config with listen.port, admin_listen,
drain_timeout_s and (SQLite on the PVC) the ledger path filled in. Refuses, with a
message, a SQLite ledger the pods could not write or share. */}}
{{- define "kinference.gatewayConfig" -}}
{{- $cfg := deepCopy (.Values.gateway.config | default dict) -}}
{{- $listen := deepCopy (get $cfg "listen" | default dict) -}}
{{- $_ := set $listen "address" (default "0.0.0.0" $listen.address) -}}
{{- $_ := set $listen "port" .Values.gateway.port -}}
{{- $_ := set $cfg "listen" $listen -}}
{{- if .Values.gateway.adminPort -}}
{{- $_ := set $cfg "admin_listen" (dict "address" "0.0.0.0" "port" .Values.gateway.adminPort) -}}
{{- end -}}
{{- if not (hasKey $cfg "drain_timeout_s") -}}
{{- $_ := set $cfg "drain_timeout_s" .Values.gateway.drainTimeoutSeconds -}}
{{- end -}}
{{- if include "kinference.sqliteLedger" . -}}
{{- $p := .Values.gateway.persistence -}}
{{- if not $p.enabled -}}
{{- fail "gateway.config.accounting keeps a SQLite ledger (ledger.store sqlite, the default), which needs a writable volume that outlives the pod: set gateway.persistence.enabled=true (one replica), or use ledger.store: postgres for several replicas (docs/kubernetes.md, \"Accounting\")" -}}
{{- end -}}
{{- if or (gt (int .Values.gateway.replicas) 1) .Values.gateway.autoscaling.enabled -}}
{{- fail "a SQLite ledger on gateway.persistence (ReadWriteOnce) serves one gateway replica: set gateway.replicas=1 (no autoscaling), or use ledger.store: postgres for several (docs/kubernetes.md, \"Accounting\")" -}}
{{- end -}}
{{- $acct := deepCopy (get $cfg "accounting") -}}
{{- $ledger := deepCopy ($acct.ledger | default dict) -}}
{{- if not $ledger.sqlite_path -}}
{{- $_ := set $ledger "sqlite_path" (printf "%s/kinference-ledger.db" $p.mountPath) -}}
{{- end -}}
{{- $_ := set $acct "ledger" $ledger -}}
{{- $_ := set $cfg "accounting" $acct -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

/**
 * The Kubernetes base under deploy/kubernetes (issue 35 part 5, docs/runbook-kubernetes.md): every
 * YAML file parses, every manifest passes the Kubernetes API schemas (kubernetes-models, the
 * OpenAPI schemas compiled to validators), and the properties the runbook relies on hold: three
 * runners with stable addresses, probes on the served paths and port, a grace period above the
 * drain, secrets only from the external Secret, the PodDisruptionBudget on the runners, the
 * migration Job on the CLI's migrate command, and the collector wired as compose wires it.
 *
 * kubernetes-models does not reject unknown fields (its schemas allow additional properties), so
 * a misspelt field passes validation: the checks below read the fields that matter by name.
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { Duration, Schema } from "effect"
import { ShardingConfig } from "effect/cluster"
import { Yaml } from "effect/encoding"
import { Deployment, type IDeployment } from "kubernetes-models/apps/v1/Deployment"
import { type IStatefulSet, StatefulSet } from "kubernetes-models/apps/v1/StatefulSet"
import { type IJob, Job } from "kubernetes-models/batch/v1/Job"
import { PodDisruptionBudget, type IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget"
import { ConfigMap } from "kubernetes-models/v1/ConfigMap"
import { type IContainer } from "kubernetes-models/v1/Container"
import { type IPodSpec } from "kubernetes-models/v1/PodSpec"
import { type ISecret, Secret } from "kubernetes-models/v1/Secret"
import { type IService, Service } from "kubernetes-models/v1/Service"

const root = fileURLToPath(new URL("../..", import.meta.url))
const base = join(root, "deploy/kubernetes")
const SECRET_NAME = "attribution-secrets"

const yamlFiles = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return yamlFiles(path)
    return /\.ya?ml$/.test(name) ? [relative(base, path)] : []
  }).sort()

const parseFile = (file: string): unknown => Yaml.parse(readFileSync(join(base, file), "utf8"))

const Kustomization = Schema.Struct({
  apiVersion: Schema.Literal("kustomize.config.k8s.io/v1beta1"),
  kind: Schema.Literal("Kustomization"),
  resources: Schema.Array(Schema.String),
  configMapGenerator: Schema.optionalKey(Schema.Array(Schema.Struct({ name: Schema.String, files: Schema.Array(Schema.String) }))),
  secretGenerator: Schema.optionalKey(Schema.Array(Schema.Unknown)),
  namePrefix: Schema.optionalKey(Schema.String),
  nameSuffix: Schema.optionalKey(Schema.String),
  images: Schema.optionalKey(Schema.Array(Schema.Struct({ name: Schema.String, newName: Schema.optionalKey(Schema.String), newTag: Schema.optionalKey(Schema.String) })))
})

/** A parsed manifest, validated against its kind's schema. */
type Manifest =
  | { readonly kind: "StatefulSet"; readonly doc: IStatefulSet }
  | { readonly kind: "Deployment"; readonly doc: IDeployment }
  | { readonly kind: "Job"; readonly doc: IJob }
  | { readonly kind: "Service"; readonly doc: IService }
  | { readonly kind: "PodDisruptionBudget"; readonly doc: IPodDisruptionBudget }
  | { readonly kind: "Secret"; readonly doc: ISecret }
  | { readonly kind: "ConfigMap" }

/** Validates `doc` against the schema of its apiVersion and kind; throws naming the file otherwise. */
const validated = (file: string, doc: unknown): Manifest => {
  const check = (model: { validate(): void }) => {
    try {
      model.validate()
    } catch (error) {
      throw new Error(`${file}: ${String(error)}`)
    }
  }
  if (StatefulSet.is(doc)) {
    check(new StatefulSet(doc))
    return { kind: "StatefulSet", doc }
  }
  if (Deployment.is(doc)) {
    check(new Deployment(doc))
    return { kind: "Deployment", doc }
  }
  if (Job.is(doc)) {
    check(new Job(doc))
    return { kind: "Job", doc }
  }
  if (Service.is(doc)) {
    check(new Service(doc))
    return { kind: "Service", doc }
  }
  if (PodDisruptionBudget.is(doc)) {
    check(new PodDisruptionBudget(doc))
    return { kind: "PodDisruptionBudget", doc }
  }
  if (Secret.is(doc)) {
    check(new Secret(doc))
    return { kind: "Secret", doc }
  }
  if (ConfigMap.is(doc)) {
    check(new ConfigMap(doc))
    return { kind: "ConfigMap" }
  }
  throw new Error(`${file}: not a manifest of a kind this test knows (apiVersion/kind)`)
}

const kustomization = Schema.decodeUnknownSync(Kustomization)(parseFile("kustomization.yaml"))
const generatedFiles = (kustomization.configMapGenerator ?? []).flatMap((generator) =>
  generator.files.map((entry) => entry.includes("=") ? entry.slice(entry.indexOf("=") + 1) : entry)
)
const resources = new Map(kustomization.resources.map((file) => [file, validated(file, parseFile(file))]))
const all = [...resources.values()]

const only = <K extends Manifest["kind"]>(kind: K): Array<Extract<Manifest, { kind: K }>> =>
  all.filter((manifest): manifest is Extract<Manifest, { kind: K }> => manifest.kind === kind)
const single = <K extends Manifest["kind"]>(kind: K): Extract<Manifest, { kind: K }> => {
  const found = only(kind)
  assert.strictEqual(found.length, 1, `exactly one ${kind} in the base`)
  return found[0]!
}

const podSpecOf = (template: { readonly spec?: IPodSpec } | undefined): IPodSpec => {
  assert.isDefined(template?.spec, "a pod template with a spec")
  return template!.spec!
}

const runnerSet = single("StatefulSet").doc
const runnerPod = podSpecOf(runnerSet.spec?.template)
const runner: IContainer = runnerPod.containers[0]!
const runnerLabels = runnerSet.spec?.template.metadata?.labels ?? {}
const migrateJob = single("Job").doc
const collector = single("Deployment").doc

const envValue = (container: IContainer, name: string): string => {
  const entry = container.env?.find((variable) => variable.name === name)
  assert.isDefined(entry?.value, `${container.name} sets ${name}`)
  return entry!.value!
}

/** The container port a probe or Service targets, by number or by the container port's name. */
const containerPort = (container: IContainer, port: number | string | undefined): number => {
  const found = typeof port === "number"
    ? container.ports?.find((candidate) => candidate.containerPort === port)
    : container.ports?.find((candidate) => candidate.name === port)
  assert.isDefined(found, `${container.name} has the port ${String(port)}`)
  return found!.containerPort
}

const selects = (selector: Record<string, string> | undefined, labels: Record<string, string>) =>
  selector !== undefined && Object.keys(selector).length > 0 &&
  Object.entries(selector).every(([key, value]) => labels[key] === value)

describe("Kubernetes manifests (deploy/kubernetes)", () => {
  it("every YAML file parses and is the kustomization, a resource, a generator's file or an example", () => {
    const files = yamlFiles(base)
    assert.isAbove(files.length, 5)
    for (const file of files) {
      const doc = parseFile(file)
      assert.isTrue(typeof doc === "object" && doc !== null, `${file} is a YAML mapping`)
      const known = file === "kustomization.yaml" || resources.has(file) || generatedFiles.includes(file) ||
        file.startsWith("examples/")
      assert.isTrue(known, `${file} is referenced by kustomization.yaml or under examples/`)
    }
  })

  it("every resource and generator file of the kustomization exists; no generated Secret, no name prefix", () => {
    for (const file of [...kustomization.resources, ...generatedFiles]) {
      assert.isTrue(existsSync(join(base, file)), `${file} exists`)
    }
    // Secrets come from outside (a generator would put their values in the repository).
    assert.isUndefined(kustomization.secretGenerator)
    assert.strictEqual(only("Secret").length, 0, "no Secret among the resources")
    // SVC_RUNNER_ADVERTISE_HOST names the headless Service literally.
    assert.isUndefined(kustomization.namePrefix)
    assert.isUndefined(kustomization.nameSuffix)
  })

  it("the examples pass the schemas and stay out of the resources", () => {
    const examples = yamlFiles(base).filter((file) => file.startsWith("examples/"))
    assert.isAbove(examples.length, 0)
    for (const file of examples) {
      assert.isFalse(kustomization.resources.some((resource) => resource.startsWith("examples")), `${file} not a resource`)
      validated(file, parseFile(file))
    }
  })

  it("three runners with stable addresses through the headless Service", () => {
    assert.strictEqual(runnerSet.spec?.replicas, 3)
    const headless = only("Service").find((service) => service.doc.metadata?.name === runnerSet.spec?.serviceName)
    assert.isDefined(headless, "the StatefulSet's serviceName is a Service of the base")
    assert.strictEqual(headless!.doc.spec?.clusterIP, "None")
    assert.isTrue(headless!.doc.spec?.publishNotReadyAddresses)
    assert.isTrue(selects(headless!.doc.spec?.selector, runnerLabels))
    assert.isTrue(selects(runnerSet.spec?.selector.matchLabels, runnerLabels))

    assert.strictEqual(envValue(runner, "SVC_CLUSTER_MODE"), "socket")
    assert.strictEqual(envValue(runner, "SVC_RUNNER_HOST"), "0.0.0.0")
    // The pod's own name under the headless Service, through the downward API.
    assert.strictEqual(
      envValue(runner, "SVC_RUNNER_ADVERTISE_HOST"),
      `$(POD_NAME).${runnerSet.spec?.serviceName}.$(POD_NAMESPACE).svc`
    )
    const downward = (name: string) => runner.env?.find((variable) => variable.name === name)?.valueFrom?.fieldRef?.fieldPath
    assert.strictEqual(downward("POD_NAME"), "metadata.name")
    assert.strictEqual(downward("POD_NAMESPACE"), "metadata.namespace")
    // Declared before use: Kubernetes expands $(VAR) only from variables listed earlier.
    const order = (name: string) => runner.env?.findIndex((variable) => variable.name === name) ?? -1
    assert.isBelow(order("POD_NAME"), order("SVC_RUNNER_ADVERTISE_HOST"))
    assert.isBelow(order("POD_NAMESPACE"), order("SVC_RUNNER_ADVERTISE_HOST"))

    const runnerPort = Number(envValue(runner, "SVC_RUNNER_PORT"))
    assert.strictEqual(containerPort(runner, "runner"), runnerPort)
    assert.strictEqual(containerPort(runner, headless!.doc.spec?.ports?.[0]?.targetPort), runnerPort)
  })

  it("the HTTP Service reaches the runners' HTTP port", () => {
    const http = only("Service").find((service) => service.doc.spec?.clusterIP !== "None" && selects(service.doc.spec?.selector, runnerLabels))
    assert.isDefined(http)
    assert.strictEqual(http!.doc.spec?.type, "ClusterIP")
    assert.strictEqual(containerPort(runner, http!.doc.spec?.ports?.[0]?.targetPort), Number(envValue(runner, "PORT")))
  })

  it("probes: readiness on /readyz, liveness and start-up on /healthz, on the port the service listens on", () => {
    const port = Number(envValue(runner, "PORT"))
    assert.strictEqual(runner.readinessProbe?.httpGet?.path, "/readyz")
    assert.strictEqual(containerPort(runner, runner.readinessProbe?.httpGet?.port), port)
    assert.strictEqual(runner.livenessProbe?.httpGet?.path, "/healthz")
    assert.strictEqual(containerPort(runner, runner.livenessProbe?.httpGet?.port), port)
    assert.strictEqual(runner.startupProbe?.httpGet?.path, "/healthz")
    assert.strictEqual(containerPort(runner, runner.startupProbe?.httpGet?.port), port)
  })

  it("the grace period covers the preStop pause and the drain (SVC_SHUTDOWN_GRACE_MS)", () => {
    const graceMs = Number(envValue(runner, "SVC_SHUTDOWN_GRACE_MS"))
    assert.isAbove(graceMs, 0)
    const command = runner.lifecycle?.preStop?.exec?.command ?? []
    assert.strictEqual(command[0], "sleep")
    const pauseSeconds = Number(command[1])
    assert.isTrue(Number.isFinite(pauseSeconds) && pauseSeconds > 0, "preStop pauses a number of seconds")
    const terminationGrace = runnerPod.terminationGracePeriodSeconds ?? 30
    assert.isAbove(terminationGrace, graceMs / 1000)
    // The kubelet counts the preStop hook within the grace period; the shards are released after
    // the HTTP drain, waiting for running entity messages up to the runner's termination timeout
    // (the service keeps effect's default: cluster/runner.ts sets no entityTerminationTimeout).
    const entityTerminationSeconds = Duration.toMillis(Duration.fromInputUnsafe(ShardingConfig.defaults.entityTerminationTimeout)) / 1000
    assert.notInclude(readFileSync(join(root, "cluster/runner.ts"), "utf8"), "entityTerminationTimeout")
    assert.isAbove(terminationGrace, pauseSeconds + graceMs / 1000 + entityTerminationSeconds)
  })

  it("the PodDisruptionBudget allows one runner away and selects the runners only", () => {
    const pdb = single("PodDisruptionBudget").doc
    assert.strictEqual(pdb.spec?.maxUnavailable, 1)
    assert.isTrue(selects(pdb.spec?.selector?.matchLabels, runnerLabels), "selects the runner pods")
    assert.isFalse(selects(pdb.spec?.selector?.matchLabels, migrateJob.spec?.template.metadata?.labels ?? {}), "not the Job's pod")
    assert.isFalse(selects(pdb.spec?.selector?.matchLabels, collector.spec?.template.metadata?.labels ?? {}), "not the collector")
  })

  it("secrets come from the one external Secret, with every key the example documents", () => {
    const example = validated("examples", parseFile("examples/attribution-secrets.example.yaml"))
    assert.strictEqual(example.kind, "Secret")
    const exampleKeys = example.kind === "Secret" ? Object.keys(example.doc.stringData ?? {}) : []
    const pods = [runnerPod, podSpecOf(migrateJob.spec?.template), podSpecOf(collector.spec?.template)]
    const referenced = new Set<string>()
    for (const pod of pods) {
      for (const container of [...pod.containers, ...(pod.initContainers ?? [])]) {
        for (const variable of container.env ?? []) {
          const ref = variable.valueFrom?.secretKeyRef
          if (ref === undefined) continue
          assert.strictEqual(ref.name, SECRET_NAME, `${container.name} ${variable.name}`)
          assert.include(exampleKeys, ref.key, `the example Secret documents ${ref.key}`)
          referenced.add(ref.key)
        }
        for (const source of container.envFrom ?? []) {
          if (source.secretRef !== undefined) assert.strictEqual(source.secretRef.name, SECRET_NAME, container.name)
        }
      }
      for (const volume of pod.volumes ?? []) {
        if (volume.secret !== undefined) assert.strictEqual(volume.secret.secretName, SECRET_NAME, volume.name)
      }
    }
    // What a production-shaped socket runner cannot start without (src/platform/config.ts).
    for (const key of ["DATABASE_URL", "SVC_SECRETS_KEY"]) {
      const ref = runner.env?.find((variable) => variable.name === key)?.valueFrom?.secretKeyRef
      assert.isDefined(ref, `the runner reads ${key} from the Secret`)
      assert.notStrictEqual(ref!.optional, true, `${key} is required`)
    }
    assert.deepStrictEqual([...referenced].sort(), [...exampleKeys].sort(), "the example documents exactly the keys read")
  })

  it("the migration Job runs the CLI's migrate command once, on the runners' image and database", () => {
    const pod = podSpecOf(migrateJob.spec?.template)
    const container = pod.containers[0]!
    assert.deepStrictEqual(container.command, ["node", "src/main/cli.ts", "migrate"])
    assert.include(readFileSync(join(root, "src/main/cli.ts"), "utf8"), `Command.make("migrate"`)
    assert.strictEqual(container.image, runner.image)
    assert.strictEqual(pod.restartPolicy, "Never")
    assert.strictEqual(migrateJob.spec?.completions ?? 1, 1)
    assert.strictEqual(migrateJob.spec?.parallelism ?? 1, 1)
    for (const key of ["DATABASE_URL", "SVC_SECRETS_KEY"]) {
      assert.deepStrictEqual(
        container.env?.find((variable) => variable.name === key)?.valueFrom?.secretKeyRef,
        runner.env?.find((variable) => variable.name === key)?.valueFrom?.secretKeyRef,
        key
      )
    }
  })

  it("every container is non-root, read-only, without privilege escalation, with requests and limits", () => {
    for (const [name, pod] of [["runner", runnerPod], ["migrate", podSpecOf(migrateJob.spec?.template)], ["collector", podSpecOf(collector.spec?.template)]] as const) {
      assert.isTrue(pod.securityContext?.runAsNonRoot, `${name}: runAsNonRoot`)
      // The image's user is a name (`node`): the kubelet can check runAsNonRoot only on a number.
      assert.isAbove(pod.securityContext?.runAsUser ?? 0, 0, `${name}: a numeric non-root user`)
      for (const container of pod.containers) {
        assert.strictEqual(container.securityContext?.readOnlyRootFilesystem, true, `${name}: read-only root`)
        assert.strictEqual(container.securityContext?.allowPrivilegeEscalation, false, `${name}: no escalation`)
        assert.include(container.securityContext?.capabilities?.drop ?? [], "ALL", `${name}: capabilities dropped`)
        for (const resource of ["cpu", "memory"]) {
          assert.isDefined(container.resources?.requests?.[resource], `${name}: ${resource} request`)
        }
        assert.isDefined(container.resources?.limits?.["memory"], `${name}: memory limit`)
        // Writable places are volumes: /tmp an emptyDir.
        for (const mount of container.volumeMounts ?? []) {
          const volume = pod.volumes?.find((candidate) => candidate.name === mount.name)
          assert.isDefined(volume, `${name}: volume ${mount.name}`)
          if (mount.readOnly !== true) assert.isDefined(volume!.emptyDir, `${name}: ${mount.mountPath} is an emptyDir`)
        }
      }
    }
    assert.isDefined(runner.volumeMounts?.find((mount) => mount.mountPath === "/tmp"), "runner: /tmp mounted")
  })

  it("telemetry: the runners push OTLP to the collector Service, configured as compose's collector", () => {
    const endpoint = new URL(envValue(runner, "OTEL_EXPORTER_OTLP_ENDPOINT"))
    const service = only("Service").find((candidate) => candidate.doc.metadata?.name === endpoint.hostname)
    assert.isDefined(service, `a Service named ${endpoint.hostname}`)
    const collectorContainer = podSpecOf(collector.spec?.template).containers[0]!
    assert.isTrue(selects(service!.doc.spec?.selector, collector.spec?.template.metadata?.labels ?? {}))
    const servicePort = service!.doc.spec?.ports?.find((port) => port.port === Number(endpoint.port))
    assert.isDefined(servicePort, `the Service serves port ${endpoint.port}`)
    assert.strictEqual(containerPort(collectorContainer, servicePort!.targetPort), 4318)

    // The configuration volume is the generated ConfigMap (kustomize rewrites its hashed name).
    const configVolume = podSpecOf(collector.spec?.template).volumes?.find((volume) => volume.configMap !== undefined)
    assert.include((kustomization.configMapGenerator ?? []).map((generator) => generator.name), configVolume?.configMap?.name)
    const generatorEntry = kustomization.configMapGenerator?.find((generator) => generator.name === configVolume?.configMap?.name)?.files[0] ?? ""
    assert.include(collectorContainer.args ?? [], `--config=/etc/otelcol/${generatorEntry.split("=")[0]}`)

    // Same receivers, processors and pipelines as deploy/otel-collector.yaml; traces to the
    // endpoint the Deployment names instead of compose's Jaeger.
    const Config = Schema.Struct({
      receivers: Schema.Unknown,
      processors: Schema.Unknown,
      exporters: Schema.Record(Schema.String, Schema.Unknown),
      service: Schema.Struct({ pipelines: Schema.Unknown, extensions: Schema.optionalKey(Schema.Array(Schema.String)) })
    })
    const compose = Schema.decodeUnknownSync(Config)(Yaml.parse(readFileSync(join(root, "deploy/otel-collector.yaml"), "utf8")))
    const kubernetes = Schema.decodeUnknownSync(Config)(parseFile(generatedFiles[0]!))
    assert.deepStrictEqual(kubernetes.receivers, compose.receivers)
    assert.deepStrictEqual(kubernetes.processors, compose.processors)
    assert.deepStrictEqual(kubernetes.service.pipelines, compose.service.pipelines)
    const { "otlp/jaeger": traces, ...otherExporters } = kubernetes.exporters
    const { "otlp/jaeger": composeTraces, ...composeOtherExporters } = compose.exporters
    assert.deepStrictEqual(otherExporters, composeOtherExporters)
    const TraceExporter = Schema.Struct({ endpoint: Schema.String, tls: Schema.Unknown })
    const tracesHere = Schema.decodeUnknownSync(TraceExporter)(traces)
    const tracesThere = Schema.decodeUnknownSync(TraceExporter)(composeTraces)
    assert.strictEqual(tracesHere.endpoint, "${env:TRACES_OTLP_ENDPOINT}")
    assert.strictEqual(tracesThere.endpoint, "jaeger:4317")
    assert.deepStrictEqual(tracesHere.tls, tracesThere.tls)
    assert.isDefined(collectorContainer.env?.find((variable) => variable.name === "TRACES_OTLP_ENDPOINT")?.value)
    assert.strictEqual(collectorContainer.readinessProbe?.httpGet?.port, "health")
    assert.strictEqual(containerPort(collectorContainer, "health"), 13133)
  })
})

/** `tessera deploy render`: Kubernetes manifests from one values file (lab/k8s-manifests.ts, docs/deploy.md). */
import * as fs from 'node:fs';
import type { Command } from 'commander';
import { DbError, ErrorCode } from '../common/errors';
import { k8sYaml, parseK8sValues, renderK8s } from '../lab/k8s-manifests';
import { print } from './cli-io';

export function registerDeployCommands(program: Command): void {
  const deploy = program.command('deploy').description('deployment beyond one machine (docs/deploy.md)');
  deploy
    .command('render')
    .description('render the Kubernetes manifests (StatefulSets, headless Services, PodDisruptionBudgets, the Secret when the values carry it) from a values file')
    .requiredOption('--values <file>', 'the values file (YAML; deploy/kubernetes/values.yaml)')
    .option('--out <file>', 'write the manifests here (default: standard output)')
    .action((o: { values: string; out?: string }) => {
      let text: string;
      try {
        text = fs.readFileSync(o.values, 'utf8');
      } catch (e) {
        throw new DbError(ErrorCode.INVALID_ARGUMENT, `cannot read --values ${o.values}: ${(e as Error).message}`);
      }
      const yaml = k8sYaml(renderK8s(parseK8sValues(text)), o.values);
      if (o.out) fs.writeFileSync(o.out, yaml);
      else print(yaml.trimEnd());
    });
}

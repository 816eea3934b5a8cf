// What a module takes at run time: esbuild bundles it in memory with every package left out, and lists its inputs.
import { build, type BuildOptions } from 'esbuild';

export interface RunTimeCode {
  /** The repository's files the bundle holds, relative to the repository, sorted. */
  inputs: string[];
  /** What the bundle still imports: packages and node: modules. */
  imports: string[];
  /** The bundle's code. */
  text: string;
}

/** Bundles `entry` (a path) for `platform`, packages external; `options` adds others of esbuild's (jsx, say). */
export async function runTimeCode(entry: string, platform: 'node' | 'browser', options: BuildOptions = {}): Promise<RunTimeCode> {
  const result = await build({
    ...options,
    entryPoints: [entry],
    bundle: true,
    write: false,
    metafile: true,
    platform,
    format: 'esm',
    packages: 'external',
    logLevel: 'silent',
  });
  const output = Object.values(result.metafile.outputs)[0]!;
  return {
    inputs: Object.keys(result.metafile.inputs).sort(),
    imports: output.imports.map((i) => i.path),
    text: result.outputFiles[0]!.text,
  };
}

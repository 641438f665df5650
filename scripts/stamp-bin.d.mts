/** Types of stamp-bin.mjs, for the tests that import it. */
export interface PipelineNode {
  readonly env: Readonly<Record<string, string>>;
  readonly flags: readonly string[];
}
export function launcherScript(program: string, node: PipelineNode): string;
export function stampBin(program: string, distDir?: string): Promise<string>;

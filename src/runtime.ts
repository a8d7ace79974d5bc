export const REQUIRED_NODE_MAJOR = 24;

/** Fails loudly on the wrong runtime (the machine's own Node may be older than the pinned one). */
export function assertNodeVersion(version: string = process.versions.node): void {
  const major = Number(version.split('.')[0]);
  if (major !== REQUIRED_NODE_MAJOR) {
    throw new Error(
      `Portcullis needs Node ${REQUIRED_NODE_MAJOR} LTS; this is Node ${version}. Run it through npm (npm start), which uses the pinned runtime.`,
    );
  }
}

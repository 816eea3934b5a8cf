// Scenario files for tests, as YAML text.

/** The fleet of one VM, vm0, and a first step at 0 that starts an operation of `type` on it, named `ref`: steps follow. */
export function startingWith(type: string, ref: string): string {
  return `fleet:
  vms: [{ name: vm0 }]
steps:
  - at: 0
    operation: { type: ${type}, vms: [vm0] }
    as: ${ref}
`;
}

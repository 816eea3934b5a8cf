// Fleet specs in tests: where generated or parsed VMs landed, as a table to compare.

interface Placed {
  name: string;
  tenant?: string;
  faultDomain?: number;
  updateDomain?: number;
  host?: string;
  scaleSet?: string;
}

/** Each VM as [name, tenant, fault domain, update domain, host], and its scale set last `withScaleSet`. */
export function placement(specs: readonly Placed[], withScaleSet = false): unknown[][] {
  return specs.map((s) => [s.name, s.tenant, s.faultDomain, s.updateDomain, s.host, ...(withScaleSet ? [s.scaleSet] : [])]);
}

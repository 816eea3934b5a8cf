// The wire contract of /metadata/instance and /metadata/versions (SPEC §4, Azure's IMDS docs).
import { INSTANCE_API_VERSIONS } from './versions.js';

/**
 * [imds] The api-version in which each documented field of /metadata/instance first appears
 * (the "Version introduced" column of Azure's compute and network tables). Fields not listed
 * here are part of every instance api-version. Keys are paths below /metadata/instance.
 */
export const INSTANCE_FIELD_SINCE: Readonly<Record<string, string>> = Object.freeze({
  'compute/location': '2017-04-02',
  'compute/name': '2017-04-02',
  'compute/offer': '2017-04-02',
  'compute/osType': '2017-04-02',
  'compute/platformFaultDomain': '2017-04-02',
  'compute/platformUpdateDomain': '2017-04-02',
  'compute/publisher': '2017-04-02',
  'compute/sku': '2017-04-02',
  'compute/version': '2017-04-02',
  'compute/vmId': '2017-04-02',
  'compute/placementGroupId': '2017-08-01',
  'compute/resourceGroupName': '2017-08-01',
  'compute/subscriptionId': '2017-08-01',
  'compute/tags': '2017-08-01',
  'compute/vmScaleSetName': '2017-12-01',
  'compute/vmSize': '2017-12-01',
  'compute/zone': '2017-12-01',
  'compute/plan': '2018-04-02',
  'compute/publicKeys': '2018-04-02',
  'compute/azEnvironment': '2018-10-01',
  'compute/provider': '2018-10-01',
  'compute/customData': '2019-02-01',
  'compute/resourceId': '2019-03-11',
  'compute/storageProfile': '2019-06-01',
  'compute/tagsList': '2019-06-04',
  'compute/isHostCompatibilityLayerVm': '2020-06-01',
  'compute/securityProfile': '2020-06-01',
  'compute/osProfile': '2020-07-15',
  'compute/licenseType': '2020-09-01',
  'compute/evictionPolicy': '2020-12-01',
  'compute/priority': '2020-12-01',
  'compute/userData': '2021-01-01',
  'compute/storageProfile/resourceDisk': '2021-02-01',
  'compute/extendedLocation': '2021-03-01',
  'compute/virtualMachineScaleSet': '2021-03-01',
  'compute/platformSubFaultDomain': '2021-10-01',
  'compute/additionalCapabilities': '2021-11-01',
  'compute/securityProfile/encryptionAtHost': '2021-11-01',
  'compute/host': '2021-11-15',
  'compute/hostGroup': '2021-11-15',
  'compute/securityProfile/securityType': '2023-07-01',
});

/** Whether `path` (below /metadata/instance) exists at this instance api-version. ISO dates sort as strings. */
export function instanceFieldAt(path: string, version: string): boolean {
  const since = INSTANCE_FIELD_SINCE[path];
  return since === undefined || version >= since;
}

/** The body of GET /metadata/versions. */
export interface VersionsBody {
  apiVersions: string[];
}

export function versionsBody(): VersionsBody {
  return { apiVersions: [...INSTANCE_API_VERSIONS] };
}

/** The two response formats of /metadata/instance. */
export const INSTANCE_FORMATS = ['json', 'text'] as const;
export type InstanceFormat = (typeof INSTANCE_FORMATS)[number];

/**
 * [choice] Azure's docs give the status (400: "missing parameter format=text when querying a leaf
 * node") but not the body's wording; these are ours, in the style of IMDS's other errors.
 */
export const LEAF_NEEDS_TEXT = 'Bad request. A leaf node must be queried with format=text. For more information refer to aka.ms/azureimds';
export const TEXT_NEEDS_LEAF =
  'Bad request. format=text applies only to leaf nodes; query this node with format=json. For more information refer to aka.ms/azureimds';
export const FORMAT_INVALID = 'Bad request. format must be json or text. For more information refer to aka.ms/azureimds';

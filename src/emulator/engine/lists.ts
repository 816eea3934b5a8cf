// Lists that mostly hold one or a few items, kept at their exact size: a push onto a new array
// reserves 17 slots (about 150 bytes), and an operation keeps a dozen such lists, so at a million
// VMs the slack was most of a rolling update's memory.

/** Below this length a list is copied rather than grown in place. */
const SMALL = 16;

/** The list with `item` at its end: a new exact-size list while it is small, the same list grown after. */
export function appended<T>(list: T[], item: T): T[] {
  if (list.length >= SMALL) {
    list.push(item);
    return list;
  }
  return list.concat([item]);
}

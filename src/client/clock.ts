// The client's only wall-clock read: the default for the injectable `now` option.
export const systemNow = (): number => Date.now();

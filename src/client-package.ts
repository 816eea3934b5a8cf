// `forewarn/client`: the @forewarn/client package, re-exported so both names give the same classes.
export * from '@forewarn/client';

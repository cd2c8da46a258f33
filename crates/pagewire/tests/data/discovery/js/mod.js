// A module script: it imports nothing.
export const ok = true;

/** Style sheets are bundled by esbuild (decision 0123); to the type checker they are side effects only. */
declare module "*.css" {}

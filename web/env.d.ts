// Stylesheets imported for their effect: esbuild puts them into the bundle's CSS file.
declare module "*.css"

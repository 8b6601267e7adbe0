import{a as e,b as r}from"./chunk-5MVFYWFU.mjs";import"./chunk-ZS6VBONO.mjs";import"./chunk-AQ6EADP3.mjs";export{e as PieModule,r as createPieServices};

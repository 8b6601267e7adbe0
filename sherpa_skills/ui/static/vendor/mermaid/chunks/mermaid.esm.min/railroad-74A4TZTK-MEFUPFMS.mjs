import{a as r,b as o}from"./chunk-KD6SPIPN.mjs";import"./chunk-ZS6VBONO.mjs";import"./chunk-AQ6EADP3.mjs";export{r as RailroadModule,o as createRailroadServices};

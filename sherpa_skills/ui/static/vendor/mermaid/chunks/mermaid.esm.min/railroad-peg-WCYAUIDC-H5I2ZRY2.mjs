import{a as e,b as r}from"./chunk-YBMQ5JGJ.mjs";import"./chunk-ZS6VBONO.mjs";import"./chunk-AQ6EADP3.mjs";export{e as RailroadPegModule,r as createRailroadPegServices};

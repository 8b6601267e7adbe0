import{a as e,b as r}from"./chunk-SFMINX4W.mjs";import"./chunk-ZS6VBONO.mjs";import"./chunk-AQ6EADP3.mjs";export{e as TreeViewModule,r as createTreeViewServices};

Creator "igraph version 1.0.0 Fri Nov 27 01:28:51 2026"
Version 1
graph
[
  directed 0
  node
  [
    id 0
    name "1"
  ]
  node
  [
    id 1
    name "2"
  ]
  node
  [
    id 2
    name "3"
  ]
  node
  [
    id 3
    name "4"
  ]
  node
  [
    id 4
    name "5"
  ]
  node
  [
    id 5
    name "6"
  ]
  node
  [
    id 6
    name "7"
  ]
  node
  [
    id 7
    name "8"
  ]
  edge
  [
    source 1
    target 0
    weight 1
  ]
  edge
  [
    source 2
    target 0
    weight 2
  ]
  edge
  [
    source 2
    target 1
    weight 3
  ]
  edge
  [
    source 3
    target 2
    weight 2
  ]
  edge
  [
    source 4
    target 3
    weight 1
  ]
  edge
  [
    source 5
    target 4
    weight 3
  ]
  edge
  [
    source 6
    target 5
    weight 2
  ]
  edge
  [
    source 6
    target 0
    weight 3
  ]
  edge
  [
    source 4
    target 1
    weight 2
  ]
  edge
  [
    source 5
    target 5
    weight 1
  ]
]

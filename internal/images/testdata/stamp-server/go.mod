module example.invalid/stampserver

go 1.26
